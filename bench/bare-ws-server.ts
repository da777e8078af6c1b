/**
 * Baseline for the fan-out benchmark: a bare `ws` 8 server on node:http, doing the naive thing.
 * Accepts WebSocket clients on /v1/ws (subprotocol svc.v1, no compression), greets each with a
 * small `welcome` frame, and on `POST /send` sends the request body, as a string, to every
 * client in one loop of `ws.send(string)`, then answers 200 `{"clients": N, "loopMs": <time the loop took>}`. No auth, no
 * rooms, no storage. Listens on 127.0.0.1 and the port in PORT (0 = any free port); prints its
 * address when ready.
 */
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const WELCOME = JSON.stringify({ type: 'welcome', protocol: 'svc.v1' });

const server = createServer((request, response) => {
  if (request.method !== 'POST' || request.url !== '/send') {
    response.writeHead(404).end();
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const message = Buffer.concat(chunks).toString();
    const started = performance.now();
    let clients = 0;
    for (const ws of wss.clients) {
      if (ws.readyState !== ws.OPEN) continue;
      ws.send(message);
      clients++;
    }
    const loopMs = performance.now() - started;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ clients, loopMs }));
  });
});

const wss = new WebSocketServer({
  server,
  path: '/v1/ws',
  perMessageDeflate: false,
  handleProtocols: (protocols) => (protocols.has('svc.v1') ? 'svc.v1' : false),
});
wss.on('connection', (ws) => {
  ws.on('error', () => undefined);
  ws.send(WELCOME);
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`Bare ws server listening on http://127.0.0.1:${port}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    for (const ws of wss.clients) ws.terminate();
    wss.close();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 2_000).unref();
  });
}
