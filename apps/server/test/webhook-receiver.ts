import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A real HTTP receiver on 127.0.0.1 whose answers the test decides. */
export class WebhookReceiver {
  readonly received: Received[] = [];
  /** How to answer the next requests; default 200. */
  respond: (res: ServerResponse, request: Received) => void = (res) => res.writeHead(200).end('ok');
  private server: Server | null = null;
  private port = 0;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const request = { headers: req.headers, body, at: Date.now() };
        this.received.push(request);
        this.respond(res, request);
      });
    });
    // A restarted receiver comes back on the same port.
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    this.url = `http://127.0.0.1:${this.port}/hook`;
    return this;
  }

  /** Stops listening: later deliveries meet a refused connection. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  ids(): string[] {
    return this.received.map((r) => String(r.headers['webhook-id']));
  }
}
