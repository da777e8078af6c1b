import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { LocalBus } from '@svc/protocol';
import { connectNats, NatsBus, NatsSessionDirectory, SESSIONS_BUCKET, type SessionDirectory } from '@svc/storage';
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
  const recorded = (sessionId: string) => directory.find(TENANT.seq, sessionId);

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
      record: async () => undefined,
      remove: async () => undefined,
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
      remove: async () => undefined,
    });
    const viewer = await h.join('svc_unrecorded');
    expect((viewer.ofType('welcome')[0]!.session as { resumed: boolean }).resumed).toBe(false);
    fail(new Error('NATS is away'));
    await vi.waitFor(() => expect(warnings).toEqual([expect.stringContaining('writing a session to the directory failed')]));
  });
});
