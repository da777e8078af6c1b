import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashUserId, PgDatabase, PgDeletionJobStore, PgErasureTombstones, PgWebhookDeliveryStore, type AttemptOutcome, type NewDelivery, type WebhookQueue } from '../src';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';

const available = postgresAvailable();
const DAY_MS = 24 * 60 * 60 * 1000;
const T0 = 1_767_000_000_000;

const delivery = (n: number, overrides: Partial<NewDelivery> = {}): NewDelivery => ({
  id: `0190a6a0-0000-7000-8000-${String(n).padStart(12, '0')}`,
  tenantSeq: 1,
  endpointId: 'wh_a',
  eventId: `0190a6a0-1111-7000-8000-${String(n).padStart(12, '0')}`,
  event: 'poll.voted',
  userId: null,
  payload: `{"n":${n}}`,
  createdAt: T0 + n,
  ...overrides,
});

const outcome = (status: AttemptOutcome['status'], attempts: number, at: number, extra: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
  status, attempts, nextAttemptAt: status === 'pending' ? at + 5_000 : null, attemptedAt: at,
  statusCode: status === 'delivered' ? 200 : 503, error: status === 'delivered' ? null : 'HTTP 503', latencyMs: 7, ...extra,
});

/** What the store queued again, in memory. */
class RecordingQueue implements Pick<WebhookQueue, 'requeue'> {
  readonly requeued: Array<{ id: string; attempts: number; at: number }> = [];
  async requeue(deliveries: Array<{ delivery: NewDelivery; attempts: number }>, at: number): Promise<void> {
    for (const d of deliveries) this.requeued.push({ id: d.delivery.id, attempts: d.attempts, at });
  }
}

describe.runIf(available)('PostgreSQL webhook delivery log (cluster mode)', () => {
  let server: PostgresServer;
  let db: PgDatabase | null = null;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    await db?.close();
    db = null;
  });

  const open = async () => {
    db = await PgDatabase.open(await server.createDatabase());
    const queue = new RecordingQueue();
    return { store: new PgWebhookDeliveryStore(db, queue), queue, db };
  };

  it('logs a delivery with its first outcome and shows the newest attempt as its state', async () => {
    const { store } = await open();
    const d = delivery(1);
    await store.appendAttempts([{ delivery: d, outcome: outcome('pending', 1, T0 + 10) }]);
    await store.appendAttempts([{ delivery: d, outcome: outcome('delivered', 2, T0 + 5_010) }]);
    expect(await store.getDelivery(1, d.id)).toEqual({
      ...d, status: 'delivered', attempts: 2, nextAttemptAt: null, lastAttemptAt: T0 + 5_010, lastStatusCode: 200, lastError: null,
      lastLatencyMs: 7, deliveredAt: T0 + 5_010,
    });
    expect(await store.latestStates([d.id, delivery(2).id, 'not-a-uuid'])).toEqual(new Map([[d.id, { status: 'delivered', attempts: 2 }]]));
    // A finished delivery takes no more rows (a late attempt of another node, a crash before the acknowledgement).
    await store.appendAttempts([{ delivery: d, outcome: outcome('failed', 3, T0 + 9_000) }]);
    expect(await store.getDelivery(1, d.id)).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(await store.getDelivery(2, d.id)).toBeNull();
    expect(await store.getDelivery(1, 'nope')).toBeNull();
  });

  it("lists an endpoint's deliveries newest first, by status, page after page", async () => {
    const { store } = await open();
    const all = Array.from({ length: 7 }, (_, i) => delivery(i + 1));
    await store.appendAttempts(all.map((d, i) => ({ delivery: d, outcome: outcome(i % 2 ? 'failed' : 'delivered', 1, T0 + 100) })));
    await store.appendAttempts([{ delivery: delivery(8, { endpointId: 'wh_b' }), outcome: outcome('delivered', 1, T0) }]);
    const first = await store.listDeliveries(1, 'wh_a', { limit: 3 });
    expect(first.map((d) => d.id)).toEqual([all[6]!.id, all[5]!.id, all[4]!.id]);
    const last = first[first.length - 1]!;
    const next = await store.listDeliveries(1, 'wh_a', { limit: 10, before: { createdAt: last.createdAt, id: last.id } });
    expect(next.map((d) => d.id)).toEqual([all[3]!.id, all[2]!.id, all[1]!.id, all[0]!.id]);
    const failed = await store.listDeliveries(1, 'wh_a', { limit: 10, status: 'failed' });
    expect(failed.map((d) => d.id)).toEqual([all[5]!.id, all[3]!.id, all[1]!.id]);
    expect(await store.listDeliveries(1, 'wh_b', { limit: 10 })).toHaveLength(1);
  });

  it('replays by appending a pending state and queuing the delivery again with its attempts', async () => {
    const { store, queue } = await open();
    const [a, b, c] = [delivery(1), delivery(2), delivery(3)];
    await store.appendAttempts([
      { delivery: a, outcome: outcome('failed', 10, T0 + 100) },
      { delivery: b, outcome: outcome('delivered', 1, T0 + 100) },
      { delivery: c, outcome: outcome('pending', 1, T0 + 100) },
    ]);
    const replayed = await store.requeue(1, 'wh_a', { failedSince: T0 }, T0 + 1_000);
    expect(replayed.map((r) => [r.id, r.status, r.attempts, r.nextAttemptAt, r.lastStatusCode])).toEqual([[a.id, 'pending', 10, T0 + 1_000, 503]]);
    expect(queue.requeued).toEqual([{ id: a.id, attempts: 10, at: T0 + 1_000 }]);
    // One delivery, whatever its state but pending.
    expect((await store.requeue(1, 'wh_a', { id: b.id }, T0 + 2_000)).map((r) => r.id)).toEqual([b.id]);
    expect(await store.requeue(1, 'wh_a', { id: c.id }, T0 + 2_000)).toEqual([]);
    // The replayed delivery takes its next attempt's outcome.
    await store.appendAttempts([{ delivery: a, outcome: outcome('delivered', 11, T0 + 3_000) }]);
    expect(await store.getDelivery(1, a.id)).toMatchObject({ status: 'delivered', attempts: 11, deliveredAt: T0 + 3_000 });
  });

  it('leaves the log as it was when the queue cannot take a replay', async () => {
    db = await PgDatabase.open(await server.createDatabase());
    const refusing = { requeue: async () => Promise.reject(Object.assign(new Error('queue down'), { code: 'storage_unavailable' })) };
    const store = new PgWebhookDeliveryStore(db, refusing);
    const d = delivery(1);
    await store.appendAttempts([{ delivery: d, outcome: outcome('failed', 10, T0) }]);
    await expect(store.requeue(1, 'wh_a', { id: d.id }, T0 + 1_000)).rejects.toThrow('queue down');
    expect(await store.getDelivery(1, d.id)).toMatchObject({ status: 'failed', attempts: 10 });
  });

  it("fails an endpoint's waiting retries when it is disabled, and removes them when it is deleted", async () => {
    const { store } = await open();
    const [waiting, done, other] = [delivery(1), delivery(2), delivery(3, { endpointId: 'wh_b' })];
    await store.appendAttempts([
      { delivery: waiting, outcome: outcome('pending', 1, T0) },
      { delivery: done, outcome: outcome('delivered', 1, T0) },
      { delivery: other, outcome: outcome('pending', 1, T0) },
    ]);
    expect(await store.pendingAmong([waiting.id, done.id, other.id])).toEqual(new Set([waiting.id, other.id]));
    expect(await store.failPending(1, 'wh_a', 'Endpoint disabled: gone', T0 + 50)).toBe(1);
    expect(await store.getDelivery(1, waiting.id)).toMatchObject({ status: 'failed', attempts: 1, lastAttemptAt: T0, lastError: 'Endpoint disabled: gone' });
    // An attempt that was in flight meanwhile does not bring it back.
    await store.recordAttempts([{ id: waiting.id, outcome: outcome('pending', 2, T0 + 60) }]);
    expect(await store.getDelivery(1, waiting.id)).toMatchObject({ status: 'failed', attempts: 1 });
    expect(await store.deletePending(1, 'wh_b')).toBe(1);
    expect(await store.getDelivery(1, other.id)).toBeNull();
    expect(await store.getDelivery(1, done.id)).not.toBeNull();
  });

  it('purges finished deliveries older than the cutoff, with their attempts, and keeps waiting ones', async () => {
    const { store, db } = await open();
    const old = delivery(1, { createdAt: T0 - 31 * DAY_MS });
    const oldWaiting = delivery(2, { createdAt: T0 - 31 * DAY_MS });
    const recent = delivery(3, { createdAt: T0 - 29 * DAY_MS });
    await store.appendAttempts([
      { delivery: old, outcome: outcome('failed', 10, T0 - 27 * DAY_MS) },
      { delivery: oldWaiting, outcome: outcome('pending', 3, T0 - 31 * DAY_MS) },
      { delivery: recent, outcome: outcome('delivered', 1, T0 - 29 * DAY_MS) },
    ]);
    expect(await store.purgeBefore(T0 - 30 * DAY_MS)).toBe(1);
    expect(await store.getDelivery(1, old.id)).toBeNull();
    expect(await store.getDelivery(1, oldWaiting.id)).not.toBeNull();
    expect(await store.getDelivery(1, recent.id)).not.toBeNull();
    const [left] = await db.run((sql) => sql<{ n: number }[]>`SELECT count(*)::integer AS n FROM webhook_attempts WHERE delivery_id = ${old.id}::uuid`);
    expect(left!.n).toBe(0);
  });

  it("logs a test message as one finished attempt, and erases a user's deliveries by userId or by its hash", async () => {
    const { store } = await open();
    const test = delivery(9, { event: 'webhook.test' });
    await store.logDelivery({ ...test, status: 'failed', attempts: 1, nextAttemptAt: null, lastAttemptAt: T0, lastStatusCode: null, lastError: 'ECONNREFUSED', lastLatencyMs: 3, deliveredAt: null });
    expect(await store.getDelivery(1, test.id)).toMatchObject({ event: 'webhook.test', status: 'failed', attempts: 1, lastError: 'ECONNREFUSED', lastLatencyMs: 3 });
    const [ann, bob, annElsewhere] = [delivery(1, { userId: 'ann' }), delivery(2, { userId: 'bob' }), delivery(3, { userId: 'ann', tenantSeq: 2 })];
    await store.appendAttempts([ann, bob, annElsewhere].map((d) => ({ delivery: d, outcome: outcome('delivered', 1, T0) })));
    expect(await store.eraseUser(1, hashUserId('ann'))).toBe(1);
    expect(await store.getDelivery(1, ann.id)).toBeNull();
    expect(await store.eraseUser(1, hashUserId('bob'), 'bob')).toBe(1);
    expect(await store.getDelivery(1, bob.id)).toBeNull();
    expect(await store.getDelivery(2, annElsewhere.id)).not.toBeNull();
  });

  it('knows from the deletion jobs which deliveries belong to a user erased after they were made', async () => {
    const { db } = await open();
    let now = T0;
    const tombstones = new PgErasureTombstones(db, 60_000, () => now);
    await tombstones.start();
    const made = delivery(1, { userId: 'ann', createdAt: T0 - 1_000 });
    expect(tombstones.erased(made)).toBe(false);
    await new PgDeletionJobStore(db).create({
      id: 'del_1', tenantSeq: 1, userHash: hashUserId('ann'), status: 'pending', requestedAt: T0,
      completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null,
    });
    await tombstones.refresh();
    expect(tombstones.erased(made)).toBe(true);
    // Events of the user that came after the request, another tenant's user, and a delivery without a user go.
    expect(tombstones.erased({ ...made, createdAt: T0 + 1 })).toBe(false);
    expect(tombstones.erased({ ...made, tenantSeq: 2 })).toBe(false);
    expect(tombstones.erased({ ...made, userId: null })).toBe(false);
    now = T0 + 8 * DAY_MS;
    await tombstones.refresh();
    expect(tombstones.erased(made)).toBe(false);
    tombstones.stop();
  });

  it('never lets a read that began before a job overwrite a refresh asked for after it', async () => {
    const { db } = await open();
    // The first read's answer comes late: it was read before the job existed.
    let release: () => void = () => {};
    const late = new Promise<void>((resolve) => (release = resolve));
    let reads = 0;
    const slowFirst = {
      run: async (query: Parameters<PgDatabase['run']>[0]) => {
        const rows = await db.run(query);
        if (reads++ === 0) await late;
        return rows;
      },
    } as unknown as PgDatabase;
    const tombstones = new PgErasureTombstones(slowFirst, 60_000, () => T0);
    const made = delivery(1, { userId: 'ann', createdAt: T0 - 1_000 });
    const first = tombstones.refresh();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await new PgDeletionJobStore(db).create({
      id: 'del_2', tenantSeq: 1, userHash: hashUserId('ann'), status: 'pending', requestedAt: T0,
      completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null,
    });
    const asked = tombstones.refresh();
    setTimeout(release, 200);
    await Promise.all([first, asked]);
    expect(tombstones.erased(made)).toBe(true);
  });
});
