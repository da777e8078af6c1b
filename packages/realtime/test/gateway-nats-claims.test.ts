import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Bus, IngestResult } from '@svc/protocol';
import { CLAIMS_BUCKET, claimKeys, connectNats, MemorySessionDirectory, NatsBus, NatsViewerClaims, type OverlayRecord } from '@svc/storage';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { natsAvailable, startNats, type NatsServer } from '../../storage/test/nats-server';
import type { GatewayDeps, GatewayEventSink } from '../src';
import { pollRecord, startGateway, type Harness, type Message } from './gateway-harness';

const available = natsAvailable();
const CONTEST: OverlayRecord = { ...pollRecord('contest-1'), type: 'contest', content: { type: 'contest', title: 'Win' } };
const ACCEPTED: IngestResult = { accepted: 1, duplicates: 0, rejected: [] };

/** An ingest that stores everything and announces stored votes and entries on the node's bus, as `announceStored` does. */
function announcingIngest(bus: Bus): GatewayEventSink {
  return {
    ingest: async ({ tenant, body }) => {
      const event = body as { event: string; eventId: string; sessionId: string; userId: string | null; broadcastId: string; timestamp: string; data: unknown };
      const { eventId, sessionId, userId, broadcastId } = event;
      const data = JSON.stringify(event.data);
      const at = Date.parse(event.timestamp);
      if (event.event === 'poll.voted') await bus.publish('poll.voted', { tenantSeq: tenant.seq, votes: [{ eventId, sessionId, userId, broadcastId, timestampMs: at, receivedAtMs: at, data }] });
      if (event.event === 'contest.entered') await bus.publish('contest.entered', { tenantSeq: tenant.seq, entries: [{ eventId, sessionId, userId, broadcastId, data }] });
      return ACCEPTED;
    },
    campaignOf: async () => 1,
  };
}

/** Two gateways (two nodes), each with its own NATS connection, bus and claims, on one NATS server. */
describe.skipIf(!available)('one vote and one entry per viewer across two gateways on NATS', () => {
  let server: NatsServer;
  let connections: NatsConnection[] = [];
  let buses: NatsBus[] = [];
  let nodes: Harness[] = [];
  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    await Promise.all(nodes.map((node) => node.close()));
    for (const bus of buses) bus.close();
    await (await new Kvm(connections[0]!).open(CLAIMS_BUCKET)).destroy();
    await Promise.all(connections.map((connection) => connection.close()));
    [connections, buses, nodes] = [[], [], []];
  });

  const startNodes = async (deps: Partial<GatewayDeps> = {}): Promise<[Harness, Harness]> => {
    connections = [await connectNats(server.url), await connectNats(server.url)];
    buses = connections.map((connection) => new NatsBus(connection));
    for (const [i, connection] of connections.entries()) {
      const bus = buses[i]!;
      const claims = await NatsViewerClaims.open(connection, { replicas: 1 });
      nodes.push(await startGateway({ throttleMs: 1_000 }, [pollRecord('poll-1'), CONTEST], [], bus, { claims, events: announcingIngest(bus), ...deps }));
    }
    await Promise.all(buses.map((bus) => bus.flush()));
    return [nodes[0]!, nodes[1]!];
  };

  /** Whatever one node published has reached the other's subscribers (each connection flushed, then each again). */
  const crossed = async () => {
    for (const bus of [...buses, ...buses]) await bus.flush();
  };

  const answers = (replies: Message[]) => replies.map((reply) => (reply.type === 'ack' ? 'ack' : reply.code)).sort();

  it('takes one vote of a userId voting on both nodes at once, and both nodes count it once', async () => {
    const [a, b] = await startNodes();
    const [watcherA, watcherB] = [await a.join('svc_watcher_a'), await b.join('svc_watcher_b')];
    const phone = await a.join('svc_phone', 'b', 'user-1');
    const laptop = await b.join('svc_laptop', 'b', 'user-1');
    const replies = await Promise.all([
      phone.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 }),
      laptop.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 }),
    ]);
    expect(answers(replies)).toEqual(['ack', 'already_voted']);
    const winner = replies[0]!.type === 'ack' ? 0 : 1;
    // Each node's results, pushed at once and after the throttle, count the vote once.
    for (const [node, watcher] of [[a, watcherA], [b, watcherB]] as const) {
      await watcher.next((m) => m.type === 'poll.results');
      node.timers.advance(2_000);
      await watcher.settle();
      expect(watcher.ofType('poll.results').at(-1)).toMatchObject({ counts: winner === 0 ? [1, 0] : [0, 1], total: 1 });
      expect(watcher.ofType('poll.results').every((m) => m.total === 1)).toBe(true);
    }
    // A third device of the user, on either node, is told of the vote and may not vote.
    await crossed();
    for (const node of [a, b]) {
      const tablet = await node.join(`svc_tablet_${node === a ? 'a' : 'b'}`, 'b', 'user-1');
      expect(tablet.ofType('welcome')[0]).toMatchObject({ viewer: { votes: { 'poll-1': winner } } });
      expect(await tablet.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 })).toMatchObject({ type: 'error', code: 'already_voted' });
    }
  });

  it('takes one entry of a userId entering on both nodes at once, and both nodes list it in welcomes', async () => {
    const [a, b] = await startNodes();
    const phone = await a.join('svc_phone', 'b', 'user-1');
    const laptop = await b.join('svc_laptop', 'b', 'user-1');
    const replies = await Promise.all([
      phone.request({ type: 'contest.enter', contestId: 'contest-1' }),
      laptop.request({ type: 'contest.enter', contestId: 'contest-1' }),
    ]);
    expect(answers(replies)).toEqual(['ack', 'already_entered']);
    await crossed();
    for (const node of [a, b]) {
      const tablet = await node.join(`svc_tablet_${node === a ? 'a' : 'b'}`, 'b', 'user-1');
      expect(tablet.ofType('welcome')[0]).toMatchObject({ viewer: { contests: ['contest-1'] } });
      expect(await tablet.request({ type: 'contest.enter', contestId: 'contest-1' })).toMatchObject({ type: 'error', code: 'already_entered' });
    }
  });
  /** Whether `userId`'s claim of the poll is taken in the bucket. */
  const userClaimed = async (userId: string) => {
    const kv = await new Kvm(connections[0]!).open(CLAIMS_BUCKET);
    const entry = await kv.get(claimKeys.userVote({ tenantSeq: 1, pollId: 'poll-1', sessionId: '', userId, attempt: '' }));
    return entry?.operation === 'PUT';
  };

  it('refuses on every node the user a session took after voting, when it resumes on the same node', async () => {
    const [a, b] = await startNodes();
    const anonymous = await a.join('svc_s1');
    expect(await anonymous.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 })).toMatchObject({ type: 'ack' });
    anonymous.ws.close(1000);
    await expect.poll(() => a.connectionOf('svc_s1')).toBeUndefined();
    const signedIn = await a.join('svc_s1', 'b', 'user-1');
    expect(signedIn.ofType('welcome')[0]).toMatchObject({ session: { resumed: true } });
    await expect.poll(() => userClaimed('user-1'), { timeout: 5_000 }).toBe(true);
    const otherOnB = await b.join('svc_s3', 'b', 'user-1');
    expect(await otherOnB.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 })).toMatchObject({ type: 'error', code: 'already_voted' });
  });

  it('binds the user a session took to its vote when it resumes on another node, and refuses that user on every node', async () => {
    const directory = new MemorySessionDirectory();
    const [a, b] = await startNodes({ viewerCountsAcrossNodes: true, sessionDirectory: directory });
    // Node B has the broadcast's room open: the vote cast on A reaches it on the bus.
    const watcherB = await b.join('svc_watcher_b');
    const anonymous = await a.join('svc_s1');
    expect(await anonymous.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 })).toMatchObject({ type: 'ack' });
    await crossed();
    b.timers.advance(1_000);
    await watcherB.next((m) => m.type === 'poll.results');
    anonymous.ws.close(1000);
    await expect.poll(() => a.connectionOf('svc_s1')).toBeUndefined();
    // Node B hears that node A is alive (its counts), so the session resumes there.
    a.timers.advance(1_000);
    await crossed();
    const moved = await b.join('svc_s1', 'b', 'user-1');
    expect(moved.ofType('welcome')[0]).toMatchObject({ session: { resumed: true }, viewer: { votes: { 'poll-1': 0 } } });
    // On node B the room binds the user; node A learns it through the claims.
    const otherOnB = await b.join('svc_s2', 'b', 'user-1');
    expect(otherOnB.ofType('welcome')[0]).toMatchObject({ viewer: { votes: { 'poll-1': 0 } } });
    expect(await otherOnB.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 })).toMatchObject({ type: 'error', code: 'already_voted' });
    await expect.poll(() => userClaimed('user-1'), { timeout: 5_000 }).toBe(true);
    const otherOnA = await a.join('svc_s3', 'b', 'user-1');
    expect(await otherOnA.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 })).toMatchObject({ type: 'error', code: 'already_voted' });
  });
});
