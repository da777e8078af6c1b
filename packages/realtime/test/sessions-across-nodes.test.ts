import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { LocalBus, type Bus, type BusTopics } from '@svc/protocol';
import { connectNats, MemorySessionDirectory, NatsBus, NatsSessionDirectory, SESSIONS_BUCKET, type SessionDirectory } from '@svc/storage';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { natsAvailable, startNats, type NatsServer } from '../../storage/test/nats-server';
import { startGateway, TENANT, type Harness, type Viewer } from './gateway-harness';

const available = natsAvailable();

const INTERVAL_MS = 1_000;
const GRACE_MS = 30_000;

/** What a gateway's event sink received of one kind. */
const written = (h: Harness, event: string) => (h.ingested as Array<{ event: string; sessionId: string; data?: Record<string, unknown> }>).filter((e) => e.event === event);
const resumedIn = (viewer: Viewer) => (viewer.ofType('welcome')[0]?.session as { resumed: boolean }).resumed;
/** Lets messages between the nodes arrive. */
const crossed = () => new Promise((resolve) => setTimeout(resolve, 300));

/**
 * Two gateways (nodes A and B), each on its own `NatsBus` and `NatsSessionDirectory` over one
 * NATS server, counting viewers across nodes (which tells each which nodes are alive).
 */
describe.skipIf(!available)('a session resumes on another node', () => {
  let server: NatsServer;
  let connections: NatsConnection[] = [];
  let buses: NatsBus[] = [];
  let a: Harness;
  let b: Harness;
  let directory: NatsSessionDirectory;
  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    await Promise.allSettled([a?.close(), b?.close()]);
    for (const bus of buses) bus.close();
    await Promise.all(connections.map((connection) => connection.close()));
    connections = [];
    buses = [];
  });

  const node = async () => {
    const connection = await connectNats(server.url);
    connections.push(connection);
    const bus = new NatsBus(connection, { onError: () => undefined });
    buses.push(bus);
    directory = await NatsSessionDirectory.open(connection, { replicas: 1 });
    const h = await startGateway({ viewerCountIntervalMs: INTERVAL_MS, resumeGraceMs: GRACE_MS }, [], [], bus, { viewerCountsAcrossNodes: true, sessionDirectory: directory });
    await bus.flush();
    return h;
  };

  /** Nodes A and B, each having heard the other's viewer counts. */
  const start = async () => {
    const connection = await connectNats(server.url);
    await (await new Kvm(connection).open(SESSIONS_BUCKET).catch(() => null))?.destroy().catch(() => undefined);
    await connection.close();
    a = await node();
    b = await node();
    const known = await a.join('svc_known');
    a.timers.advance(INTERVAL_MS);
    await vi.waitFor(async () => expect((await b.gateway.liveViewersByBroadcast(TENANT.seq)).get('b')).toBe(1));
    known.ws.close(1000);
    await vi.waitFor(() => expect(a.connectionOf('svc_known')).toBeUndefined());
  };
  const recorded = async (sessionId: string) => (await directory.find(TENANT.seq, sessionId))?.session ?? null;

  it('resumes on node B a session closed on node A within the grace: no broadcast.left from A, one left from B covering the whole session', async () => {
    await start();
    const onA = await a.join('svc_moving');
    expect(resumedIn(onA)).toBe(false);
    await vi.waitFor(async () => expect((await recorded('svc_moving'))?.node).toBeDefined());
    const { joinedAt: startedAt, node: nodeA } = (await recorded('svc_moving'))!;
    onA.ws.close(1000);
    await vi.waitFor(() => expect(a.connectionOf('svc_moving')).toBeUndefined());

    const onB = await b.join('svc_moving');
    expect(resumedIn(onB)).toBe(true);
    // The directory names node B now, with the session's start on A.
    await vi.waitFor(async () => expect((await recorded('svc_moving'))?.node).not.toBe(nodeA));
    expect(await recorded('svc_moving')).toEqual({ node: expect.any(String), broadcastId: 'b', joinedAt: startedAt });
    await crossed();
    // Node A's grace ends: it dropped the session, so it writes nothing.
    a.timers.advance(GRACE_MS + 1);
    await crossed();
    expect(written(a, 'broadcast.left')).toEqual([expect.objectContaining({ sessionId: 'svc_known' })]);

    // The session ends on B, which writes its broadcast.left from the session's start on A.
    b.timers.advance(5_000);
    const leftAt = b.clock.now();
    onB.ws.close(1000);
    await vi.waitFor(() => expect(b.connectionOf('svc_moving')).toBeUndefined());
    b.timers.advance(GRACE_MS + 1);
    await vi.waitFor(() => expect(written(b, 'broadcast.left')).toHaveLength(1));
    expect(written(b, 'broadcast.left')[0]).toMatchObject({ sessionId: 'svc_moving', data: { reason: 'closed', watchedMs: leftAt - startedAt } });
    expect(written(a, 'broadcast.left').map((e) => e.sessionId)).toEqual(['svc_known']);

    // After its grace the session is gone from the directory: the same id is a new session again.
    await vi.waitFor(async () => expect(await recorded('svc_moving')).toBeNull());
    const again = await a.join('svc_moving');
    expect(resumedIn(again)).toBe(false);
  });

  it('takes over a session still connected on node A: its socket there closes as replaced, its viewer counts move', async () => {
    await start();
    const onA = await a.join('svc_twice');
    await vi.waitFor(async () => expect(await recorded('svc_twice')).not.toBeNull());
    const onB = await b.join('svc_twice');
    expect(resumedIn(onB)).toBe(true);
    expect(await Promise.race([onA.closed, new Promise((resolve) => setTimeout(() => resolve('still open'), 5_000))])).toMatchObject({ code: 4409, reason: 'replaced' });
    expect(await a.gateway.viewerCount(TENANT.seq, 'b')).toBe(0);
    expect(await b.gateway.viewerCount(TENANT.seq, 'b')).toBe(1);
    a.timers.advance(GRACE_MS + 1);
    await crossed();
    expect(written(a, 'broadcast.left').map((e) => e.sessionId)).toEqual(['svc_known']);
    // Node A counts no viewer of it any more.
    a.timers.advance(INTERVAL_MS);
    b.timers.advance(INTERVAL_MS);
    await vi.waitFor(async () => expect((await b.gateway.liveViewersByBroadcast(TENANT.seq)).get('b')).toBe(1));
  });

  it('resumes the session of a node that vanished less than the grace ago, and not of one gone longer', async () => {
    await start();
    const fresh = await a.join('svc_fresh');
    const stale = await a.join('svc_stale');
    await vi.waitFor(async () => expect((await Promise.all([recorded('svc_fresh'), recorded('svc_stale')])).every(Boolean)).toBe(true));
    // Node A stops without a word (its sessions stay in the directory): its bus is cut first, so
    // that the empty count a gateway publishes when it closes cleanly does not leave it.
    fresh.ws.terminate();
    stale.ws.terminate();
    buses[0]!.close();
    await a.close();
    b.timers.advance(2 * INTERVAL_MS + GRACE_MS - 1_000);
    expect(resumedIn(await b.join('svc_fresh'))).toBe(true);
    b.timers.advance(2_000);
    expect(resumedIn(await b.join('svc_stale'))).toBe(false);
  });

  it('starts a new session when the directory has it on another broadcast', async () => {
    await start();
    await a.join('svc_switch', 'other');
    await vi.waitFor(async () => expect(await recorded('svc_switch')).not.toBeNull());
    const onB = await b.join('svc_switch', 'b');
    expect(resumedIn(onB)).toBe(false);
    expect(a.connectionOf('svc_switch')).toBeDefined();
  });
});

/** One gateway counting viewers across nodes, with a directory that fails as told. */
describe('a session directory that fails or is slow', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const start = async (directory: SessionDirectory) => {
    const warnings: string[] = [];
    h = await startGateway({ viewerCountIntervalMs: INTERVAL_MS }, [], [], new LocalBus(), {
      viewerCountsAcrossNodes: true,
      sessionDirectory: directory,
      log: { warn: (_obj, msg) => void warnings.push(msg), error: () => undefined },
    });
    return { h, warnings };
  };

  it('starts a new session, and says why, when the directory does not answer a lookup within a second', async () => {
    let lookups = 0;
    const { h, warnings } = await start({
      find: () => {
        lookups++;
        return new Promise(() => undefined);
      },
      record: async () => 1,
      move: async () => null,
      remove: async () => 'gone',
    });
    const attempt = await h.attempt({ sessionId: 'svc_waiting' });
    if (attempt.kind !== 'opened') throw new Error(`refused: ${attempt.status}`);
    await vi.waitFor(() => expect(lookups).toBe(1));
    h.timers.advance(999);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(attempt.viewer.ofType('welcome')).toEqual([]);
    h.timers.advance(1);
    const welcome = await attempt.viewer.next((m) => m.type === 'welcome');
    expect(welcome.session).toEqual({ id: 'svc_waiting', resumed: false });
    expect(warnings).toEqual([expect.stringContaining('looking up a session in the directory failed')]);
  });

  it('welcomes a viewer without waiting for its session to be recorded, and logs a record that failed', async () => {
    let fail!: (error: Error) => void;
    const { h, warnings } = await start({
      find: async () => null,
      record: () => new Promise((_resolve, reject) => (fail = reject)),
      move: async () => null,
      remove: async () => 'gone',
    });
    const viewer = await h.join('svc_unrecorded');
    expect((viewer.ofType('welcome')[0]!.session as { resumed: boolean }).resumed).toBe(false);
    fail(new Error('NATS is away'));
    await vi.waitFor(() => expect(warnings).toEqual([expect.stringContaining('writing a session to the directory failed')]));
  });
});

/**
 * Nodes A and B in one process, on one `LocalBus` (B has heard A's counts: A is alive), sharing a
 * `MemorySessionDirectory` that each node reaches through a directory of its own (to fail, or to
 * let time pass between two of its requests).
 */
describe('the handoff of a session between two nodes', () => {
  let nodes: Harness[] = [];
  afterEach(async () => {
    await Promise.allSettled(nodes.map((node) => node.close()));
    nodes = [];
  });

  const shared = () => new MemorySessionDirectory();
  /** `directory`, except that every removal fails (NATS does not answer). */
  const failingRemovals = (directory: MemorySessionDirectory): SessionDirectory => ({
    record: (t, s, o) => directory.record(t, s, o),
    find: (t, s) => directory.find(t, s),
    move: (t, s, o, r) => directory.move(t, s, o, r),
    remove: async () => {
      throw new Error('NATS does not answer');
    },
  });
  const twoNodes = async (onA: SessionDirectory, onB: (a: Harness) => SessionDirectory, warnOnA: (obj: object, msg: string) => void = () => undefined, busOfB: (bus: Bus) => Bus = (bus) => bus) => {
    const bus = new LocalBus();
    const options = { viewerCountIntervalMs: INTERVAL_MS, resumeGraceMs: GRACE_MS };
    const a = await startGateway(options, [], [], bus, { viewerCountsAcrossNodes: true, sessionDirectory: onA, log: { warn: warnOnA, error: () => undefined } });
    nodes.push(a);
    const b = await startGateway(options, [], [], busOfB(bus), { viewerCountsAcrossNodes: true, sessionDirectory: onB(a) });
    nodes.push(b);
    a.timers.advance(INTERVAL_MS);
    return { a, b, bus };
  };
  /** Joins on A, and closes the socket there: the session waits for its grace on A. */
  const leftA = async (a: Harness, sessionId: string) => {
    const viewer = await a.join(sessionId);
    viewer.ws.close(1000);
    await vi.waitFor(() => expect(a.connectionOf(sessionId)).toBeUndefined());
  };
  const leftBy = (h: Harness) => written(h, 'broadcast.left').map((e) => e.sessionId);

  it('starts a new session on B, and A writes its broadcast.left, when A ends the session between B\'s lookup and its takeover', async () => {
    const directory = shared();
    const { a, b } = await twoNodes(directory, (a) => ({
      record: (t, s, o) => directory.record(t, s, o),
      move: (t, s, o, r) => directory.move(t, s, o, r),
      remove: (t, s, o) => directory.remove(t, s, o),
      // B found the record; A's grace ends before B moves it.
      find: async (t, s) => {
        const found = await directory.find(t, s);
        a.timers.advance(GRACE_MS);
        return found;
      },
    }));
    await leftA(a, 'svc_race');
    a.timers.advance(GRACE_MS - 2_000);
    const onB = await b.join('svc_race');
    expect(resumedIn(onB)).toBe(false);
    await vi.waitFor(() => expect(leftBy(a)).toEqual(['svc_race']));
    // B's session is its own: the directory names B, with B's start.
    expect((await directory.find(TENANT.seq, 'svc_race'))?.session).toEqual({ node: expect.any(String), broadcastId: 'b', joinedAt: b.clock.now() });
  });

  it('writes no broadcast.left on A when B took the session over before A\'s grace ended, even before A heard of the move', async () => {
    const directory = shared();
    // B's session.moved is late: it reaches A after A's grace ended.
    const late: Array<() => void> = [];
    const lateMoves = (bus: Bus): Bus => ({
      publish: (topic, payload) => {
        if (topic !== 'session.moved') return bus.publish(topic, payload);
        late.push(() => void bus.publish(topic, payload));
        return Promise.resolve();
      },
      subscribe: (topic, handler) => bus.subscribe(topic, handler),
    });
    const { a, b } = await twoNodes(directory, () => directory, undefined, lateMoves);
    await leftA(a, 'svc_taken');
    a.timers.advance(GRACE_MS - 2_000);
    const onB = await b.join('svc_taken');
    expect(resumedIn(onB)).toBe(true);
    a.timers.advance(2_000);
    await crossed();
    expect(leftBy(a)).toEqual([]);
    for (const move of late) move();
    expect(b.connectionOf('svc_taken')).toBeDefined();
    expect(leftBy(a)).toEqual([]);
  });

  it('keeps a session that moved back to A when a late or repeated session.moved of its earlier move arrives', async () => {
    const directory = shared();
    const { a, b, bus } = await twoNodes(directory, () => directory);
    const moves: Array<BusTopics['session.moved']> = [];
    bus.subscribe('session.moved', (moved) => void moves.push(moved));
    await leftA(a, 'svc_back');
    const onB = await b.join('svc_back');
    expect(resumedIn(onB)).toBe(true);
    expect(moves).toHaveLength(1);
    onB.ws.close(1000);
    await vi.waitFor(() => expect(b.connectionOf('svc_back')).toBeUndefined());
    b.timers.advance(INTERVAL_MS); // A hears B
    const backOnA = await a.join('svc_back');
    expect(resumedIn(backOnA)).toBe(true);
    // The move to B, heard again.
    await a.announce('session.moved', moves[0]!);
    await crossed();
    expect(backOnA.ws.readyState).toBe(backOnA.ws.OPEN);
    expect(a.connectionOf('svc_back')).toBeDefined();
  });

  it('does not resume a session whose node ended it and could not remove its record, and removes the record once the directory answers again', async () => {
    const directory = shared();
    const warnings: string[] = [];
    const { a, b } = await twoNodes(
      failingRemovals(directory),
      () => directory,
      (_obj, msg) => void warnings.push(msg),
    );
    await leftA(a, 'svc_ended');
    a.timers.advance(GRACE_MS + 1);
    // The directory did not answer: A writes the left all the same.
    await vi.waitFor(() => expect(leftBy(a)).toEqual(['svc_ended']));
    a.timers.advance(INTERVAL_MS);
    // Ten minutes later, A alive all along, the same session id comes to B: a new session.
    for (let i = 0; i < 600; i++) a.timers.advance(INTERVAL_MS);
    const again = await b.join('svc_ended');
    expect(resumedIn(again)).toBe(false);
    expect(warnings.filter((warning) => warning.includes('removing a session from the directory failed')).length).toBeGreaterThan(0);
  });

  it('does not resume a session of a node that stopped while a removal of its was failing', async () => {
    const directory = shared();
    const { a, b } = await twoNodes(
      failingRemovals(directory),
      () => directory,
    );
    await leftA(a, 'svc_ended');
    await leftA(a, 'svc_waiting');
    a.timers.advance(GRACE_MS + 1);
    await vi.waitFor(() => expect(leftBy(a).sort()).toEqual(['svc_ended', 'svc_waiting']));
    await a.close();
    b.timers.advance(2 * INTERVAL_MS + 1_000);
    expect(resumedIn(await b.join('svc_waiting'))).toBe(false);
  });

  it('writes a record that failed again while its session is held, and removes that revision when the session ends', async () => {
    const directory = shared();
    let failures = 2;
    const { a } = await twoNodes(
      {
        record: async (t, s, o) => {
          if (failures-- > 0) throw new Error('NATS does not answer');
          return directory.record(t, s, o);
        },
        find: (t, s) => directory.find(t, s),
        move: (t, s, o, r) => directory.move(t, s, o, r),
        remove: (t, s, o, r) => directory.remove(t, s, o, r),
      },
      () => directory,
    );
    const viewer = await a.join('svc_unrecorded');
    await crossed();
    expect(await directory.find(TENANT.seq, 'svc_unrecorded')).toBeNull();
    a.timers.advance(1_000);
    await crossed();
    a.timers.advance(2_000);
    await vi.waitFor(async () => expect(await directory.find(TENANT.seq, 'svc_unrecorded')).not.toBeNull());
    viewer.ws.close(1000);
    await vi.waitFor(() => expect(a.connectionOf('svc_unrecorded')).toBeUndefined());
    a.timers.advance(GRACE_MS + 1);
    await vi.waitFor(() => expect(leftBy(a)).toEqual(['svc_unrecorded']));
    expect(await directory.find(TENANT.seq, 'svc_unrecorded')).toBeNull();
  });

  it('tries a failed removal again until the directory answers, then lets other nodes resume its sessions again', async () => {
    const directory = shared();
    let failing = true;
    const { a, b } = await twoNodes(
      {
        record: (t, s, o) => directory.record(t, s, o),
        find: (t, s) => directory.find(t, s),
        move: (t, s, o, r) => directory.move(t, s, o, r),
        remove: async (t, s, o) => {
          if (failing) throw new Error('NATS does not answer');
          return directory.remove(t, s, o);
        },
      },
      () => directory,
    );
    await leftA(a, 'svc_stuck');
    a.timers.advance(GRACE_MS + 1);
    await vi.waitFor(() => expect(leftBy(a)).toEqual(['svc_stuck']));
    for (let i = 0; i < 3; i++) {
      a.timers.advance(2 ** i * 1_000);
      await crossed();
    }
    expect(await directory.find(TENANT.seq, 'svc_stuck')).not.toBeNull();
    failing = false;
    a.timers.advance(8_000);
    await vi.waitFor(async () => expect(await directory.find(TENANT.seq, 'svc_stuck')).toBeNull());
    // A says so in its next counts: another of its sessions resumes on B again.
    await leftA(a, 'svc_later');
    a.timers.advance(INTERVAL_MS);
    expect(resumedIn(await b.join('svc_later'))).toBe(true);
  });
});
