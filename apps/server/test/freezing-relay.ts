import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP relay to a local port that can freeze the connections it carries, as a SIGSTOPped node
 * or a network partition does: nothing passes in either direction and nothing closes (an end
 * or a close on one side is not passed to the other). Connections made after `freeze()` pass.
 * (packages/storage/test/stalling-proxy.ts holds one direction back and passes closes on.)
 */
export interface FreezingRelay {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Connections opened through the relay so far. */
  readonly connections: number;
  /** Target port; connections made before it is set fail. */
  targetPort: number;
  freeze(): void;
  close(): Promise<void>;
}

export async function startFreezingRelay(): Promise<FreezingRelay> {
  const sockets = new Set<Socket>();
  const live = new Set<() => void>();
  let connections = 0;
  const server = createServer((client) => {
    connections++;
    const upstream = connect(relay.targetPort, '127.0.0.1');
    let frozen = false;
    const freeze = () => (frozen = true);
    live.add(freeze);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => frozen || to.write(chunk));
      from.on('end', () => frozen || to.end());
      from.on('close', () => frozen || to.destroy());
      from.on('error', () => undefined);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relay: FreezingRelay = {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    get connections() {
      return connections;
    },
    targetPort: 0,
    freeze() {
      for (const freeze of live) freeze();
      live.clear();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return relay;
}
