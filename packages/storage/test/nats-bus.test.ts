import type { NatsConnection } from '@nats-io/transport-node';
import type { BusTopics } from '@svc/protocol';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { describeBusContract } from '../../protocol/test/bus-contract';
import { headers } from '@nats-io/transport-node';
import { BUS_ORIGIN_HEADER, BUS_SUBJECT_PREFIX, NatsBus, connectNats } from '../src';
import { natsAvailable, startNats, type NatsServer } from './nats-server';

const available = natsAvailable();

const SHOW: BusTopics['content.changed'] = {
  tenantSeq: 3,
  broadcastId: 'final',
  change: {
    kind: 'show',
    overlay: {
      id: 'ov_1', broadcastId: 'final', type: 'poll', question: 'Who wins?', options: ['A', 'B'],
      active: true, createdAt: '2026-11-01T00:00:00.000Z', updatedAt: '2026-11-01T00:00:00.000Z', shownAt: '2026-11-01T00:00:00.000Z',
    },
  },
};
const VOTE: BusTopics['poll.voted'] = {
  tenantSeq: 3,
  votes: [{ eventId: 'e1', sessionId: 'svc_s1', userId: null, broadcastId: 'final', timestampMs: 1, receivedAtMs: 2, data: '{"pollId":"ov_1","optionIndex":0}' }],
};
const ERASING: BusTopics['user.erasing'] = { jobId: 'del_1', tenantSeq: 3, userHash: 'ab12', userId: 'user-1' };

describe.skipIf(!available)('NatsBus', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    await server?.stop();
  });

  describeBusContract('NatsBus', async () => {
    const connection = await connectNats(server.url);
    const bus = new NatsBus(connection);
    return {
      bus,
      close: async () => {
        bus.close();
        await connection.close();
      },
    };
  });

  describe('between two nodes on one server', () => {
    let connections: NatsConnection[];
    let nodeA: NatsBus;
    let nodeB: NatsBus;
    let errorsB: unknown[];
    beforeEach(async () => {
      connections = [await connectNats(server.url), await connectNats(server.url)];
      errorsB = [];
      nodeA = new NatsBus(connections[0]!, { onError: () => {} });
      nodeB = new NatsBus(connections[1]!, { onError: (error) => void errorsB.push(error) });
    });
    afterEach(async () => {
      nodeA.close();
      nodeB.close();
      await Promise.all(connections.map((connection) => connection.close()));
    });

    /** Subscribes on both nodes and waits until the server has the subscriptions. */
    async function follow<T extends keyof BusTopics>(topic: T): Promise<{ a: BusTopics[T][]; b: BusTopics[T][] }> {
      const seen = { a: [] as BusTopics[T][], b: [] as BusTopics[T][] };
      nodeA.subscribe(topic, (payload) => void seen.a.push(payload));
      nodeB.subscribe(topic, (payload) => void seen.b.push(payload));
      await Promise.all([nodeA.flush(), nodeB.flush()]);
      return seen;
    }

    /** Lets messages on their way arrive, so that a second copy would be seen. */
    const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

    it('sends an erasure notice to the other nodes without the userId in clear, keeping it on its own node', async () => {
      const seen = await follow('user.erasing');
      const notice = { jobId: 'job-1', tenantSeq: 1, userHash: 'a'.repeat(64), userId: 'user-42@example.com' };
      await nodeA.publish('user.erasing', notice);
      await vi.waitFor(() => expect(seen.b).toHaveLength(1));
      expect(seen.b).toEqual([{ ...notice, userId: null }]);
      expect(seen.a).toEqual([notice]);
    });

    it('hands an overlay change to the other node once, and to its own subscribers once, not twice', async () => {
      const seen = await follow('content.changed');
      await nodeA.publish('content.changed', SHOW);
      expect(seen.a).toEqual([SHOW]);
      await vi.waitFor(() => expect(seen.b).toEqual([SHOW]));
      await settle();
      expect(seen).toEqual({ a: [SHOW], b: [SHOW] });
    });

    it('carries votes, viewers leaving, stored events and erasures both ways', async () => {
      const votes = await follow('poll.voted');
      const left = await follow('session.left');
      const stored = await follow('events.stored');
      const erasing = await follow('user.erasing');
      const erased = await follow('user.erased');
      await nodeB.publish('poll.voted', VOTE);
      await nodeA.publish('session.left', { tenantSeq: 3, sessionIds: ['svc_s1'] });
      await nodeB.publish('events.stored', { tenantSeq: 3 });
      await nodeA.publish('user.erasing', ERASING);
      await nodeA.publish('user.erased', { ...ERASING, userId: null });
      await vi.waitFor(() => {
        expect(votes.a).toEqual([VOTE]);
        expect(left.b).toEqual([{ tenantSeq: 3, sessionIds: ['svc_s1'] }]);
        expect(stored.a).toEqual([{ tenantSeq: 3 }]);
        expect(erasing.b).toEqual([{ ...ERASING, userId: null }]);
        expect(erased.b).toEqual([{ ...ERASING, userId: null }]);
      });
      await settle();
      expect([votes.a, votes.b, left.a, stored.b, erasing.a, erased.a]).toEqual([[VOTE], [VOTE], [{ tenantSeq: 3, sessionIds: ['svc_s1'] }], [{ tenantSeq: 3 }], [ERASING], [{ ...ERASING, userId: null }]]);
    });

    it('carries stored contest entries to the other node, and drops one from elsewhere without the fields a room reads', async () => {
      const seen = await follow('contest.entered');
      const entry = { eventId: 'e2', sessionId: 'svc_s1', userId: 'user-1', broadcastId: 'final', data: '{"contestId":"ov_2","title":"Win"}' };
      const elsewhere = headers();
      elsewhere.set(BUS_ORIGIN_HEADER, 'elsewhere');
      connections[0]!.publish(`${BUS_SUBJECT_PREFIX}contest.entered`, JSON.stringify({ tenantSeq: 3, entries: [{ ...entry, data: undefined }] }), { headers: elsewhere });
      await nodeA.publish('contest.entered', { tenantSeq: 3, entries: [entry] });
      await vi.waitFor(() => expect(seen.b).toEqual([{ tenantSeq: 3, entries: [entry] }]));
      await vi.waitFor(() => expect(errorsB.map(String)).toEqual([expect.stringContaining("contest.entered message from node elsewhere: its payload does not have the topic's shape")]));
    });

    it("carries a session's move to the other node, and drops one that names no node", async () => {
      const moved = await follow('session.moved');
      const MOVE: BusTopics['session.moved'] = { tenantSeq: 3, sessionId: 'svc_s1', broadcastId: 'final', node: 'node-a', revision: 7 };
      const elsewhere = headers();
      elsewhere.set(BUS_ORIGIN_HEADER, 'elsewhere');
      connections[0]!.publish(`${BUS_SUBJECT_PREFIX}session.moved`, JSON.stringify({ ...MOVE, node: undefined }), { headers: elsewhere });
      await nodeA.publish('session.moved', MOVE);
      await vi.waitFor(() => expect(moved.b).toEqual([MOVE]));
      await vi.waitFor(() => expect(errorsB.map(String)).toEqual([expect.stringContaining("does not have the topic's shape")]));
      expect(moved.a).toEqual([MOVE]);
    });

    it('awaits only the publishing node\'s subscribers', async () => {
      let release!: () => void;
      const remoteWork = new Promise<void>((resolve) => (release = resolve));
      const remoteDone: string[] = [];
      nodeB.subscribe('user.erasing', async ({ jobId }) => {
        await remoteWork;
        remoteDone.push(jobId);
      });
      await nodeB.flush();
      await nodeA.publish('user.erasing', ERASING);
      expect(remoteDone).toEqual([]);
      release();
      await vi.waitFor(() => expect(remoteDone).toEqual(['del_1']));
    });

    it('keeps revocations and broadcast links on their node: the metadata change feed carries them', async () => {
      const revoked = await follow('apiKey.revoked');
      const registered = await follow('broadcast.registered');
      await nodeA.publish('apiKey.revoked', { tenantSeq: 3, keyId: 'ak_1', key: 'svc_pk_x' });
      await nodeA.publish('broadcast.registered', { tenantSeq: 3, broadcastId: 'final' });
      await settle();
      expect(revoked).toEqual({ a: [{ tenantSeq: 3, keyId: 'ak_1', key: 'svc_pk_x' }], b: [] });
      expect(registered).toEqual({ a: [{ tenantSeq: 3, broadcastId: 'final' }], b: [] });
    });

    it('drops and reports a message from elsewhere that is not a bus message, not JSON, or not of its topic\'s shape', async () => {
      const seen = await follow('content.changed');
      const raw = connections[0]!;
      const elsewhere = headers();
      elsewhere.set(BUS_ORIGIN_HEADER, 'elsewhere');
      const subject = `${BUS_SUBJECT_PREFIX}content.changed`;
      raw.publish(subject, JSON.stringify(SHOW));
      raw.publish(subject, '{not json', { headers: elsewhere });
      raw.publish(subject, JSON.stringify({ tenantSeq: 3, broadcastId: 'final', change: { kind: 'show' } }), { headers: elsewhere });
      raw.publish(subject, JSON.stringify({ ...SHOW, tenantSeq: '3' }), { headers: elsewhere });
      await nodeA.publish('content.changed', SHOW);
      await vi.waitFor(() => expect(seen.b).toEqual([SHOW]));
      await vi.waitFor(() => expect(errorsB).toHaveLength(4));
      expect(errorsB.map(String)).toEqual([
        expect.stringContaining('not a bus message'),
        expect.stringContaining('not JSON'),
        expect.stringContaining("does not have the topic's shape"),
        expect.stringContaining("does not have the topic's shape"),
      ]);
      expect(seen.a).toEqual([SHOW]);
    });

    it('stops listening to the other nodes once a topic has no subscriber left, and once closed', async () => {
      const seen: unknown[] = [];
      const end = nodeB.subscribe('events.stored', (payload) => void seen.push(payload));
      await nodeB.flush();
      await nodeA.publish('events.stored', { tenantSeq: 1 });
      await vi.waitFor(() => expect(seen).toEqual([{ tenantSeq: 1 }]));
      end();
      await nodeB.flush();
      await nodeA.publish('events.stored', { tenantSeq: 2 });
      nodeB.subscribe('session.left', (payload) => void seen.push(payload));
      nodeB.close();
      await nodeA.publish('session.left', { tenantSeq: 1, sessionIds: ['svc_s2'] });
      await settle();
      expect(seen).toEqual([{ tenantSeq: 1 }]);
    });

    it('reports a subscriber of the other node that fails, and keeps calling the rest', async () => {
      const seen: unknown[] = [];
      nodeB.subscribe('session.left', () => {
        throw new Error('subscriber failed');
      });
      nodeB.subscribe('session.left', (payload) => void seen.push(payload));
      await nodeB.flush();
      await nodeA.publish('session.left', { tenantSeq: 1, sessionIds: ['svc_s3'] });
      await vi.waitFor(() => expect(errorsB.map(String)).toEqual(['Error: subscriber failed']));
      expect(seen).toEqual([{ tenantSeq: 1, sessionIds: ['svc_s3'] }]);
    });
  });

  describe('across a restart of the NATS server', () => {
    let own: NatsServer;
    const connections: NatsConnection[] = [];
    afterAll(async () => {
      await Promise.all(connections.map((connection) => connection.close()));
      await own?.stop();
    });

    it('carries messages again once the clients reconnected and subscribed again by themselves', async () => {
      own = await startNats();
      connections.push(await connectNats(own.url, { reconnectWaitMs: 100 }), await connectNats(own.url, { reconnectWaitMs: 100 }));
      const nodeA = new NatsBus(connections[0]!, { onError: () => {} });
      const nodeB = new NatsBus(connections[1]!, { onError: () => {} });
      const seen: number[] = [];
      nodeB.subscribe('events.stored', ({ tenantSeq }) => void seen.push(tenantSeq));
      await nodeB.flush();
      await nodeA.publish('events.stored', { tenantSeq: 1 });
      await vi.waitFor(() => expect(seen).toEqual([1]));

      await own.kill();
      // Published while cut off: kept in the client's buffer, it reaches node B only if B's
      // subscription is back first (at most once, never counted on).
      await nodeA.publish('events.stored', { tenantSeq: 2 });
      await own.restart();
      // Both clients are back, with node B's subscription made again by its client.
      await vi.waitFor(async () => {
        await nodeA.publish('events.stored', { tenantSeq: 3 });
        await nodeB.flush();
        expect(seen).toContain(3);
      }, { timeout: 15_000, interval: 300 });
      nodeA.close();
      nodeB.close();
      expect(seen[0]).toBe(1);
    }, 30_000);
  });
});
