import { createServer, request } from 'node:http';

/** An HTTP proxy to ClickHouse that records each request's text and can answer some itself. */
export interface ClickHouseProxy {
  url: string;
  /** Each request's URL (decoded) and body, as text. */
  requests: string[];
  /** While set, requests whose text it matches get this answer instead of the server's. */
  refuse: { match: RegExp; status: number; body: string } | null;
  close(): Promise<void>;
}

export async function startClickHouseProxy(target: string): Promise<ClickHouseProxy> {
  const proxy: ClickHouseProxy = { url: '', requests: [], refuse: null, close: async () => {} };
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      const text = `${decodeURIComponent(incoming.url ?? '')}\n${body.toString()}`;
      proxy.requests.push(text);
      const refuse = proxy.refuse;
      if (refuse && refuse.match.test(text)) {
        outgoing.writeHead(refuse.status, { 'content-type': 'text/html' }).end(refuse.body);
        return;
      }
      const upstream = request(new URL(incoming.url ?? '/', target), { method: incoming.method, headers: incoming.headers }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 500, answer.headers);
        answer.pipe(outgoing);
      });
      upstream.on('error', () => outgoing.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}
