import type { NatsConnection } from '@nats-io/transport-node';
import type { Overlay } from '@svc/protocol';
import { connectNats, NatsBus, type OverlayRecord } from '@svc/storage';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { natsAvailable, startNats, type NatsServer } from '../../storage/test/nats-server';
import { VIEWER_COUNT_INTERVAL_MS } from '../src';
import { API_KEY, pollRecord, startGateway, TENANT, type Harness } from './gateway-harness';

const available = natsAvailable();

/**
 * The gateway of node B on a bus between nodes, told what happened on node A (another `NatsBus`
 * on the same NATS server): what node A's content service, ingest and deletion jobs publish.
 */
describe.skipIf(!available)('gateway on the bus between nodes', () => {
  let server: NatsServer;
  let connections: NatsConnection[] = [];
  let nodeA: NatsBus;
  let nodeB: NatsBus;
  let h: Harness;
  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    await h.close();
    nodeA.close();
    nodeB.close();
    await Promise.all(connections.map((connection) => connection.close()));
    connections = [];
  });

  const connectNodes = async () => {
    connections = [await connectNats(server.url), await connectNats(server.url)];
    nodeA = new NatsBus(connections[0]!);
    nodeB = new NatsBus(connections[1]!);
  };

  const start = async (...overlays: OverlayRecord[]) => {
    await connectNodes();
    h = await startGateway({ throttleMs: 1_000 }, overlays, [], { bus: nodeB, announcerOf: () => nodeA, ready: () => nodeB.flush(), close: async () => undefined });
  };

  it('shows and hides on its viewers an overlay changed through another node', async () => {
    await start();
    const viewer = await h.join('svc_viewer');
    const at = '2026-11-01T00:00:00.000Z';
    const shown: Overlay = { id: 'poll-1', broadcastId: 'b', type: 'poll', question: 'Which?', options: ['Yes', 'No'], active: true, createdAt: at, updatedAt: at, shownAt: at };
    await nodeA.publish('content.changed', { tenantSeq: TENANT.seq, broadcastId: 'b', change: { kind: 'show', overlay: shown } });
    expect((await viewer.next((m) => m.type === 'overlay.show')).overlay).toMatchObject({ id: 'poll-1', question: 'Which?' });
    await nodeA.publish('content.changed', { tenantSeq: TENANT.seq, broadcastId: 'b', change: { kind: 'hide', overlayId: 'poll-1', hiddenAt: '2026-11-01T00:01:00.000Z' } });
    expect(await viewer.next((m) => m.type === 'overlay.hide')).toMatchObject({ overlayId: 'poll-1' });
  });

  it('counts in its live results a vote stored through another node, once', async () => {
    await start(pollRecord('poll-1'));
    const watcher = await h.join('svc_watcher');
    const now = h.clock.now();
    const vote = { eventId: 'e1', sessionId: 'svc_on_a', userId: null, broadcastId: 'b', timestampMs: now, receivedAtMs: now, data: JSON.stringify({ pollId: 'poll-1', optionIndex: 1, optionSelected: 'No' }) };
    await nodeA.publish('poll.voted', { tenantSeq: TENANT.seq, votes: [vote] });
    await nodeA.publish('poll.voted', { tenantSeq: TENANT.seq, votes: [vote] });
    await watcher.next((m) => m.type === 'poll.results');
    h.timers.advance(2_000);
    await watcher.settle();
    expect(watcher.ofType('poll.results')).toEqual([{ type: 'poll.results', pollId: 'poll-1', counts: [0, 1], total: 1 }]);
  });

  it("counts node A's sockets in the tenant's cap on node B: 6 of 10 on A, B admits 4, then refuses with 1013 too_many_connections", async () => {
    await connectNodes();
    const options = { maxConnectionsPerTenant: 10, addressSharePercent: 100 };
    const a = await startGateway(options, [], [], nodeA, { viewerCountsAcrossNodes: true });
    try {
      h = await startGateway(options, [], [], nodeB, { viewerCountsAcrossNodes: true });
      await nodeB.flush();
      await Promise.all(Array.from({ length: 6 }, (_, i) => a.join(`svc_a${i}`)));
      a.timers.advance(VIEWER_COUNT_INTERVAL_MS);
      await expect.poll(() => h.gateway.liveViewers(TENANT.seq, () => true)).toBe(6);
      const outcomes: string[] = [];
      for (let i = 0; i < 5; i++) {
        // From another address than A's viewers: only the tenant's cap is at stake.
        const attempt = await h.attempt({ sessionId: `svc_b${i}`, localAddress: '127.0.0.2' });
        if (attempt.kind !== 'opened') throw new Error(`refused upgrade: ${attempt.status}`);
        const { viewer } = attempt;
        outcomes.push(await Promise.race([viewer.next((m) => m.type === 'welcome').then(() => 'welcome'), viewer.closed.then((c) => `${c.code} ${c.reason}`)]));
      }
      expect(outcomes).toEqual(['welcome', 'welcome', 'welcome', 'welcome', '1013 too_many_connections']);
    } finally {
      await a.close();
    }
  });

  it('leaves open the sockets of a key revoked on another node: the change feed, not the bus, tells it', async () => {
    await start();
    const viewer = await h.join('svc_kept');
    await nodeA.publish('apiKey.revoked', { tenantSeq: TENANT.seq, keyId: 'ak_1', key: API_KEY });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await viewer.settle();
    expect(h.connectionOf('svc_kept')).toBeDefined();
  });
});
