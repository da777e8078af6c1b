import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP proxy to a server that can stop passing the server's answers on, as a hung server or a lost network would. */
export interface StallingProxy {
  url: string;
  /** While stalled, what the server sends is held back (and delivered after `resume`). */
  stall(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startStallingProxy(targetPort: number, scheme = 'nats'): Promise<StallingProxy> {
  const sockets = new Set<Socket>();
  const upstreams = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client);
    upstreams.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      upstreams.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    stall: () => upstreams.forEach((u) => u.pause()),
    resume: () => upstreams.forEach((u) => u.resume()),
    async close() {
      for (const s of [...sockets, ...upstreams]) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
