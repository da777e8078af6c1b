import WebSocket from 'ws';

export interface Message {
  type: string;
  [key: string]: unknown;
}

/** A real WebSocket viewer for tests: records every message and how the socket closed. */
export class TestViewer {
  readonly messages: Message[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: Array<() => void> = [];

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.messages.push(JSON.parse(String(data)) as Message);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => {
      resolve({ code, reason: String(reason) });
      for (const wake of this.waiters.splice(0)) wake();
    }));
    ws.on('error', () => undefined);
  }

  /** Opens a socket (from `localAddress`, e.g. 127.0.0.2, to stand for another client) and waits until it opened or failed. */
  static async connect(baseUrl: string, params: Record<string, string>, headers: Record<string, string> = {}, localAddress?: string): Promise<TestViewer> {
    const url = `${baseUrl.replace(/^http/, 'ws')}/v1/ws?${new URLSearchParams(params)}`;
    const viewer = new TestViewer(new WebSocket(url, 'svc.v1', { headers, localAddress }));
    await new Promise<void>((resolve) => {
      viewer.ws.once('open', () => resolve());
      viewer.ws.once('close', () => resolve());
      viewer.ws.once('error', () => resolve());
    });
    return viewer;
  }

  /** The first message (from `from` on) matching, waiting up to `timeoutMs`. */
  async next(predicate: (m: Message) => boolean, timeoutMs = 5_000, from = 0): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.slice(from).find(predicate);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message in ${timeoutMs} ms; got ${JSON.stringify(this.messages.map((m) => m.type))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  ofType(type: string): Message[] {
    return this.messages.filter((m) => m.type === type);
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Sends and waits for the answer carrying the same requestId. */
  async request(message: Record<string, unknown>, timeoutMs = 5_000): Promise<Message> {
    const requestId = `r${Math.random().toString(36).slice(2, 10)}`;
    this.send({ ...message, requestId });
    return this.next((m) => m.requestId === requestId, timeoutMs);
  }

  close(): void {
    this.ws.close(1000);
  }

  /** Drops the TCP connection without a closing handshake. */
  vanish(): void {
    (this.ws as unknown as { _socket: { destroy(): void } })._socket.destroy();
  }
}

/** The viewers of one test: each joins a broadcast with a session of its own and is welcomed. */
export class ViewerPool {
  private readonly viewers: TestViewer[] = [];
  private sessions = 0;

  constructor(private readonly sessionPrefix: string) {}

  async welcomed(baseUrl: string, apiKey: string, contentId: string): Promise<TestViewer> {
    const viewer = await TestViewer.connect(baseUrl, { apiKey, sessionId: `svc_${this.sessionPrefix}${++this.sessions}`, contentId });
    this.viewers.push(viewer);
    await viewer.next((m) => m.type === 'welcome');
    return viewer;
  }

  /** Cuts every viewer's socket (as a network drop would). */
  terminateAll(): void {
    for (const viewer of this.viewers.splice(0)) viewer.ws.terminate();
  }
}
