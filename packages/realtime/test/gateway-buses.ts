import type { NatsConnection } from '@nats-io/transport-node';
import { BUS_TOPICS_ACROSS_NODES } from '@svc/protocol';
import { connectNats, NatsBus } from '@svc/storage';
import { afterAll, beforeAll } from 'vitest';
import { natsAvailable, startNats, type NatsServer } from '../../storage/test/nats-server';
import { localBuses, type HarnessBuses } from './gateway-harness';

export type BusKind = 'LocalBus' | 'NatsBus';

/**
 * The buses the realtime suites whose behaviour goes through the bus run on: the in-process
 * bus, and a `NatsBus` on a throwaway NATS server when `nats-server` is installed (missing:
 * skipped with a message locally, a failure in CI).
 */
export const BUS_KINDS: BusKind[] = natsAvailable() ? ['LocalBus', 'NatsBus'] : ['LocalBus'];

/**
 * The gateway on a `NatsBus` of its own NATS connection, as a node of full cluster mode; what
 * the rest of the service announces on a topic that crosses nodes comes from a second node's
 * `NatsBus` on the same server, so it reaches the gateway through NATS (not synchronously),
 * and the other topics from the gateway's own bus, as on a node.
 */
export async function natsBuses(url: string): Promise<HarnessBuses> {
  const connections: NatsConnection[] = [await connectNats(url), await connectNats(url)];
  const bus = new NatsBus(connections[0]!);
  const otherNode = new NatsBus(connections[1]!);
  return {
    bus,
    announcerOf: (topic) => (BUS_TOPICS_ACROSS_NODES[topic] ? otherNode : bus),
    ready: () => bus.flush(),
    async close() {
      bus.close();
      otherNode.close();
      await Promise.all(connections.map((connection) => connection.close()));
    },
  };
}

/**
 * Registers in the calling `describe` what buses of `kind` need (a NATS server for the
 * suite, for `NatsBus`), and returns what makes the buses of one gateway.
 */
export function busesOf(kind: BusKind): () => Promise<HarnessBuses> {
  if (kind === 'LocalBus') return async () => localBuses();
  let server: NatsServer | undefined;
  beforeAll(async () => {
    server = await startNats();
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
  });
  return async () => {
    if (!server) throw new Error('the NATS server of the suite has not started');
    return natsBuses(server.url);
  };
}
