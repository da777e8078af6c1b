import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP relay in front of a server, as a load balancer would be, that can fail the way a node
 * does: hold back the server's answers (a node about to die), cut every connection (a node
 * killed), or freeze the connections open now without closing them (a node hung or cut off:
 * nothing passes either way, no socket closes). New connections always pass.
 */
export interface TcpRelay {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** The server's address, when it is known only after the relay's (e.g. a server told the relay's URL). */
  target(serverUrl: string): void;
  /** Open sockets (each connection counts its client side and its server side). */
  sockets(): number;
  /** Connections made through the relay so far. */
  connections(): number;
  /** Server → client bytes are dropped while true. */
  hold(on: boolean): void;
  cut(): void;
  freeze(): void;
  close(): Promise<void>;
}

export async function startTcpRelay(serverUrl?: string): Promise<TcpRelay> {
  let target = serverUrl ? new URL(serverUrl) : null;
  let connections = 0;
  const open = new Set<Socket>();
  const frozen = new Set<Socket>();
  let holding = false;
  const relay = createServer((client) => {
    if (!target) return void client.destroy();
    connections++;
    const upstream = connect(Number(target.port), target.hostname);
    client.on('data', (chunk: Buffer) => {
      if (!frozen.has(client)) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!holding && !frozen.has(client)) client.write(chunk);
    });
    for (const [socket, other] of [[client, upstream], [upstream, client]] as const) {
      open.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        open.delete(socket);
        frozen.delete(socket);
        // A frozen connection stays open on the client's side, whatever the server does.
        if (!frozen.has(client)) other.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`,
    target: (url) => void (target = new URL(url)),
    sockets: () => open.size,
    connections: () => connections,
    hold: (on) => void (holding = on),
    cut: () => {
      for (const socket of open) socket.destroy();
    },
    freeze: () => {
      for (const socket of open) frozen.add(socket);
    },
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    },
  };
}
