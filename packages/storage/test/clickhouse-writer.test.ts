import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Worker } from 'node:worker_threads';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import {
  connectNats,
  EventLog,
  EventLogWriter,
  JetStreamEventStore,
  type EventLogWriterOptions,
  type EventRow,
  type WriterBatchReport,
} from '../src';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { CH_MIGRATIONS } from '../src/clickhouse/ch-migrations';
import { ClickHouseAnalyticsStore } from '../src/clickhouse/clickhouse-analytics-store';
import { ClickHouseEventStore } from '../src/clickhouse/clickhouse-event-store';
import { startClickHouseProxy } from './clickhouse-proxy';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';
import { deliveryOf, eventId, eventRow, rejectRow } from './event-log-rows';
import type { DeletionJob, EncodedEvents, QuarantineRow } from '../src';
import { hashUserId } from '../src/deletion-job-store';
import { EventLogWriterThread } from '../src/nats/writer-thread';
import { natsAvailable, startNats, type NatsServer } from './nats-server';

const available = clickhouseAvailable() && natsAvailable();
const FAST_WRITER = { batchWaitMs: 1_000, retryDelayMs: 200, ackWaitMs: 2_000 };
const WAIT = { timeout: 20_000, interval: 50 };
const HOUR_MS = 3_600_000;

/** Makes `events` again as the migrations make it: its table, then the columns of `data`'s fields. */
async function createEvents(db: ChDatabase): Promise<void> {
  await db.command(CH_MIGRATIONS[0]!.statements[0] as string);
  for (const statement of CH_MIGRATIONS.find((m) => m.version === 5)!.statements) await db.command(typeof statement === 'string' ? statement : statement.sql);
}

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = '';
  for await (const chunk of chunks) all += chunk;
  return all;
}

/**
 * ClickHouse's sink whose first insert waits until `open()` (and then fails when `failFirst`),
 * noting its lookups (with their number of keys) and inserts in order: so that a test sees what
 * the writer does with the next batch while one is being inserted.
 */
class GatedSink extends ClickHouseEventStore {
  readonly steps: string[] = [];
  failFirst = false;
  private inserts = 0;
  private opened!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.opened = resolve));

  open(): void {
    this.opened();
  }

  override async storedKeys(keys: Iterable<string>): Promise<Set<string>> {
    const list = [...keys];
    const stored = await super.storedKeys(list);
    this.steps.push(`lookup ${list.length}`);
    return stored;
  }

  override async insertEncoded(batch: { events: EncodedEvents[]; rejects: QuarantineRow[] }): Promise<void> {
    const n = ++this.inserts;
    this.steps.push(`insert ${n}`);
    if (n === 1) {
      await this.gate;
      if (this.failFirst) throw new SvcError('storage_unavailable', 'The event database is away.');
    }
    await super.insertEncoded(batch);
  }
}

/**
 * ClickHouse's sink that inserts the events of an insert holding the reject `refusedId` and then
 * refuses its rejects, as ClickHouse refuses a row it cannot parse: rows of a batch are in
 * before the writer splits it.
 */
class RejectRefusingSink extends ClickHouseEventStore {
  constructor(
    db: ChDatabase,
    private readonly refusedId: string,
  ) {
    super(db);
  }

  override async insertEncoded(batch: { events: EncodedEvents[]; rejects: QuarantineRow[] }): Promise<void> {
    // Its copy set aside in the quarantine (same id, another code) goes in.
    if (!batch.rejects.some((row) => row.id === this.refusedId && row.code !== 'event_not_storable')) return super.insertEncoded(batch);
    await super.insertEncoded({ events: batch.events, rejects: [] });
    throw new Error('Code: 27, e.displayText() = DB::Exception: Cannot parse input: expected , before: x, e.what() = DB::Exception');
  }
}

/** Events from a node's JetStreamEventStore through the stream EVENTS and the writer into ClickHouse. */
describe.skipIf(!available)('the event writer into ClickHouse', () => {
  let nats: NatsServer;
  let clickhouse: ClickHouseServer;
  let databases = 0;
  const closing: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    [nats, clickhouse] = await Promise.all([startNats(), startClickHouse()]);
  });
  afterAll(async () => {
    await Promise.allSettled([nats?.stop(), clickhouse?.stop()]);
  });
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
  });

  /** A fresh stream (deleted after the test) and database. */
  async function pipeline(options: Partial<EventLogWriterOptions> = {}) {
    const connection: NatsConnection = await connectNats(nats.url, { reconnectWaitMs: 100 });
    closing.push(() => connection.close());
    const log = await EventLog.open(connection, { publishTimeoutMs: 1_000 });
    closing.push(() => log.manager().streams.delete('EVENTS'));
    const db = await ChDatabase.open(clickhouse.url, `svc_writer_${++databases}`);
    closing.push(() => db.close());
    const errors: unknown[] = [];
    /** Another node's writer: a sink of its own (its own recent-ids cache) over the same database. */
    const startWriter = async () => {
      const writer = new EventLogWriter(log, { sink: new ClickHouseEventStore(db), enqueueDeliveries: async () => {}, onError: (e) => errors.push(e), ...FAST_WRITER, ...options });
      await writer.start();
      closing.push(() => writer.stop());
      return writer;
    };
    const writer = await startWriter();
    const sink = new ClickHouseEventStore(db);
    return { log, db, sink, writer, startWriter, errors, node: () => new JetStreamEventStore(log, sink) };
  }

  const count = async (db: ChDatabase, table = 'events') => Number((await db.query<{ n: string }>(`SELECT count() AS n FROM ${table}`))[0]!.n);

  it('stores an event once when a copy comes again later with a corrected time an hour away, in another message', async () => {
    const { db, sink, node, writer, startWriter } = await pipeline();
    const first = eventRow(1);
    await node().commit({ events: [first, eventRow(2)], rejects: [] });
    await expect.poll(() => count(db), WAIT).toBe(2);
    // Another node and its writer (no shared recent-ids cache), another batch: the sender's clock moved on.
    await writer.stop();
    await startWriter();
    const later = (e: EventRow): EventRow => ({ ...e, timestampMs: e.timestampMs + HOUR_MS, receivedAtMs: e.receivedAtMs + HOUR_MS });
    await node().commit({ events: [later(first), later(eventRow(3))], rejects: [] });
    await expect.poll(() => count(db), WAIT).toBe(3);

    const filter = { tenantSeq: 1 };
    expect(await sink.countEvents(filter)).toBe(3);
    const lines = (await text(sink.streamEventText(filter, 'ndjson'))).trimEnd().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { eventId: string }).eventId).sort()).toEqual([first, eventRow(2), eventRow(3)].map((e) => e.eventId));
    expect(await count(db)).toBe(3);
    const analytics = new ClickHouseAnalyticsStore(db, { find: () => undefined });
    const range = { tenantSeq: 1, fromMs: first.timestampMs - HOUR_MS, toMs: first.timestampMs + 2 * HOUR_MS };
    const revenue = await analytics.revenue(range);
    expect(revenue.reduce((sum, r) => sum + r.orders, 0)).toBe(3);
  });

  it('stores messages of the first format still in the stream after an upgrade, beside messages of the current one', async () => {
    const { log, db, sink, node } = await pipeline();
    const old = [eventRow(1), eventRow(2, { userId: null })];
    // As a node of the previous version published them: the rows as JSON.
    await jetstream(log.connection).publish('svc.events.1', JSON.stringify({ events: old, rejects: [rejectRow(1)], deliveries: [] }), { msgID: 'first-format' });
    await node().commit({ events: [eventRow(3)], rejects: [] });
    await expect.poll(() => count(db), WAIT).toBe(3);
    expect((await sink.queryEvents({ tenantSeq: 1 }, { limit: 10 })).map((e) => [e.eventId, e.userId])).toEqual(
      [...old, eventRow(3)].map((e) => [e.eventId, e.userId]),
    );
    // Inserted after the events.
    await expect.poll(async () => (await sink.listRejected(1, { limit: 10 })).length, WAIT).toBe(1);
  });

  it('sets aside an event ClickHouse refuses, in the quarantine, sends none of its webhooks, and stores the others of its batch and the later ones', async () => {
    const enqueued: string[] = [];
    const { log, db, sink, writer, errors, node } = await pipeline({ enqueueDeliveries: async (deliveries) => void enqueued.push(...deliveries.map((d) => d.eventId)) });
    const good = [eventRow(1), eventRow(2), eventRow(3)];
    const refused = eventRow(4, { eventId: 'not-a-uuid' });
    // A message of the first format with a row the events table cannot take, amid good ones.
    const deliveries = [deliveryOf(good[0]!), deliveryOf(refused), deliveryOf(good[1]!)];
    await jetstream(log.connection).publish('svc.events.1', JSON.stringify({ events: [good[0], refused, good[1]], rejects: [], deliveries }), { msgID: 'poison' });
    await node().commit({ events: [good[2]!], rejects: [] });
    await expect.poll(() => count(db), WAIT).toBe(3);
    await expect.poll(async () => (await log.manager().streams.info('EVENTS')).state.messages, WAIT).toBe(0);
    const quarantined = await sink.listRejected(1, { limit: 10 });
    expect(quarantined).toMatchObject([{ code: 'event_not_storable', event: 'checkout.completed', payload: { event_id: 'not-a-uuid', user_id: 'u-4' } }]);
    expect(writer.setAsideRows).toBe(1);
    expect(enqueued.sort()).toEqual([good[0]!.eventId, good[1]!.eventId].sort());
    expect(errors).toContainEqual(expect.objectContaining({ code: 'event_not_storable' }));
    // Later events are not held up.
    await node().commit({ events: [eventRow(5)], rejects: [] });
    await expect.poll(() => count(db), WAIT).toBe(4);
  });

  it('stores each event of a batch once when the sink refuses a reject after the events went in, and the writer stores the batch in halves', async () => {
    const { log, db, sink, errors, writer: first } = await pipeline();
    await first.stop();
    const refused = rejectRow(1);
    const writer = new EventLogWriter(log, { sink: new RejectRefusingSink(db, refused.id), enqueueDeliveries: async () => {}, onError: (e) => errors.push(e), ...FAST_WRITER });
    await writer.start();
    closing.push(() => writer.stop());
    const rowsOf = async (n: number) => Number((await db.query<{ n: string }>(`SELECT count() AS n FROM events WHERE event_id = '${eventId(n)}'`))[0]!.n);
    await jetstream(log.connection).publish('svc.events.1', JSON.stringify({ events: [eventRow(1), eventRow(2), eventRow(3)], rejects: [rejectRow(2), refused], deliveries: [] }), { msgID: 'refused-reject' });
    await expect.poll(async () => (await log.manager().streams.info('EVENTS')).state.messages, WAIT).toBe(0);
    expect(writer.setAsideRows).toBe(1);
    expect((await sink.listRejected(1, { limit: 10 })).map((r) => r.code).sort()).toEqual(['event_not_storable', 'unknown_event']);
    // Not inserted again by the halves (copies merge some day, but until then they are counted twice).
    expect([await rowsOf(1), await rowsOf(2), await rowsOf(3)]).toEqual([1, 1, 1]);
  });

  it('reports each batch it wrote with its rows and the time of its insert, and none that failed', async () => {
    const batches: WriterBatchReport[] = [];
    const { db, errors, node } = await pipeline({ onBatch: (batch) => void batches.push(batch) });
    await db.command('DROP TABLE events');
    await node().commit({ events: [eventRow(1), eventRow(2), eventRow(3)], rejects: [rejectRow(1)] });
    await expect.poll(() => errors.length, WAIT).toBeGreaterThanOrEqual(1);
    expect(batches).toEqual([]);
    await createEvents(db);
    await expect.poll(() => batches.reduce((rows, batch) => rows + batch.rows, 0), WAIT).toBe(4);
    for (const batch of batches) expect(batch.insertMs).toBeGreaterThan(0);
  });

  it('retries a batch while a table is missing (a failure of the whole database), setting nothing aside and dropping no reject', async () => {
    const { log, db, sink, writer, errors, node } = await pipeline();
    const messages = async () => (await log.manager().streams.info('EVENTS')).state.messages;
    await db.command('DROP TABLE events');
    await node().commit({ events: [eventRow(1), eventRow(2), eventRow(3)], rejects: [] });
    // Tried and retried as it is, nothing set aside.
    await expect.poll(() => errors.length, WAIT).toBeGreaterThanOrEqual(3);
    expect(writer.setAsideRows).toBe(0);
    expect(await messages()).toBe(1);
    await createEvents(db);
    await expect.poll(() => count(db), WAIT).toBe(3);
    await expect.poll(messages, WAIT).toBe(0);

    // A batch of rejects only, while the quarantine is missing: kept, not dropped.
    await db.command('DROP TABLE rejected_events');
    const seen = errors.length;
    await node().commit({ events: [], rejects: [rejectRow(1), rejectRow(2)] });
    await expect.poll(() => errors.length, WAIT).toBeGreaterThanOrEqual(seen + 3);
    expect(await messages()).toBe(1);
    await db.command(CH_MIGRATIONS[0]!.statements[1] as string);
    await expect.poll(async () => (await sink.listRejected(1, { limit: 10 })).map((r) => r.code), WAIT).toEqual(['unknown_event', 'unknown_event']);
    expect(writer.setAsideRows).toBe(0);
    expect(errors).not.toContainEqual(expect.objectContaining({ code: 'event_not_storable' }));
  });

  it('retries a batch while a proxy in front of ClickHouse answers its inserts with an error page, setting nothing aside', async () => {
    const proxy = await startClickHouseProxy(clickhouse.url);
    closing.push(() => proxy.close());
    const { log, db, errors, node, writer: first } = await pipeline();
    const viaProxy = await ChDatabase.open(proxy.url, db.name);
    closing.push(() => viaProxy.close());
    const writer = new EventLogWriter(log, { sink: new ClickHouseEventStore(viaProxy), enqueueDeliveries: async () => {}, onError: (e) => errors.push(e), ...FAST_WRITER });
    proxy.refuse = { match: /INSERT\W+INTO\W+events\W/, status: 502, body: '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>' };
    // Only this writer runs: the pipeline's own stops first.
    await first.stop();
    await writer.start();
    closing.push(() => writer.stop());
    await node().commit({ events: [eventRow(1), eventRow(2), eventRow(3)], rejects: [] });
    await expect.poll(() => errors.length, WAIT).toBeGreaterThanOrEqual(3);
    expect(writer.setAsideRows).toBe(0);
    expect((await log.manager().streams.info('EVENTS')).state.messages).toBe(1);
    proxy.refuse = null;
    await expect.poll(() => count(db), WAIT).toBe(3);
    expect(writer.setAsideRows).toBe(0);
  });

  /** The pipeline with its writer replaced by one writing into a GatedSink. */
  async function gatedPipeline() {
    const parts = await pipeline();
    await parts.writer.stop();
    const gated = new GatedSink(parts.db);
    const writer = new EventLogWriter(parts.log, { sink: gated, enqueueDeliveries: async () => {}, onError: (e) => parts.errors.push(e), ...FAST_WRITER });
    await writer.start();
    closing.push(() => writer.stop());
    const messages = async () => (await parts.log.manager().streams.info('EVENTS')).state.messages;
    const rowsOf = async (n: number) => Number((await parts.db.query<{ n: string }>(`SELECT count() AS n FROM events WHERE event_id = '${eventId(n)}'`))[0]!.n);
    return { ...parts, gated, writer, messages, rowsOf };
  }

  it('looks the next batch up while one is inserted, and stores once an event of both', async () => {
    const { db, gated, node, messages, rowsOf } = await gatedPipeline();
    await node().commit({ events: [eventRow(1), eventRow(2)], rejects: [] });
    await expect.poll(() => gated.steps, WAIT).toEqual(['lookup 2', 'insert 1']);
    // A copy of event 2 (another corrected time) comes while event 2 is being inserted, so not in ClickHouse yet.
    await node().commit({ events: [eventRow(2, { timestampMs: eventRow(2).timestampMs + HOUR_MS }), eventRow(3)], rejects: [] });
    await expect.poll(() => gated.steps, WAIT).toEqual(['lookup 2', 'insert 1', 'lookup 2']);
    gated.open();
    await expect.poll(messages, WAIT).toBe(0);
    expect(gated.steps).toEqual(['lookup 2', 'insert 1', 'lookup 2', 'insert 2']);
    expect(await count(db)).toBe(3);
    expect([await rowsOf(1), await rowsOf(2), await rowsOf(3)]).toEqual([1, 1, 1]);
  });

  it('loses nothing when an insert fails while the next batch, holding a copy of one of its events, is prepared', async () => {
    const { db, gated, node, messages, rowsOf, errors } = await gatedPipeline();
    gated.failFirst = true;
    await node().commit({ events: [eventRow(1), eventRow(2)], rejects: [rejectRow(1)] });
    await expect.poll(() => gated.steps, WAIT).toEqual(['lookup 2', 'insert 1']);
    await node().commit({ events: [eventRow(2, { timestampMs: eventRow(2).timestampMs + HOUR_MS }), eventRow(3)], rejects: [rejectRow(1)] });
    await expect.poll(() => gated.steps, WAIT).toEqual(['lookup 2', 'insert 1', 'lookup 2']);
    gated.open();
    // The failed batch comes again after the retry delay; every event and the reject are stored once.
    await expect.poll(messages, WAIT).toBe(0);
    expect(errors).toContainEqual(expect.objectContaining({ code: 'storage_unavailable' }));
    expect(await count(db)).toBe(3);
    expect([await rowsOf(1), await rowsOf(2), await rowsOf(3)]).toEqual([1, 1, 1]);
    expect(await count(db, 'rejected_events')).toBe(1);
  });

  it('stores the copy in the next batch of an event that the batch before set aside as not storable', async () => {
    const { log, db, sink, gated, node, messages, writer } = await gatedPipeline();
    // A message of the first format whose copy of event 2 has a time ClickHouse cannot read (an
    // Int64 column given an exponent): set aside in the quarantine. (Not a text: the line writes
    // what is not a finite number as null, which ClickHouse takes as 0.)
    const unreadable = { ...eventRow(2), timestampMs: 1e21 };
    await jetstream(log.connection).publish('svc.events.1', JSON.stringify({ events: [eventRow(1), unreadable], rejects: [], deliveries: [] }), { msgID: 'unreadable' });
    await expect.poll(() => gated.steps, WAIT).toEqual(['lookup 2', 'insert 1']);
    await node().commit({ events: [eventRow(2), eventRow(3)], rejects: [] });
    await expect.poll(() => gated.steps, WAIT).toEqual(['lookup 2', 'insert 1', 'lookup 2']);
    gated.open();
    await expect.poll(messages, WAIT).toBe(0);
    expect(writer.setAsideRows).toBe(1);
    expect((await sink.listRejected(1, { limit: 10 })).map((r) => r.code)).toEqual(['event_not_storable']);
    expect(await count(db)).toBe(3);
    expect((await sink.queryEvents({ tenantSeq: 1 }, { limit: 10 })).map((e) => [e.eventId, e.sessionId])).toEqual(
      [eventRow(1), eventRow(2), eventRow(3)].map((e) => [e.eventId, e.sessionId]),
    );
  });

  it('runs the writer in a thread of its own: stores the events, drops those of a user being erased (the deletion jobs asked from the main thread), and stops', async () => {
    const { log, db, node, writer: inProcess } = await pipeline();
    await inProcess.stop();
    const erasing: DeletionJob = {
      id: 'job-1', tenantSeq: 1, userHash: hashUserId('u-2'), status: 'pending', requestedAt: Date.now(), completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null,
    } as DeletionJob;
    let asked = 0;
    const errors: unknown[] = [];
    const thread = new EventLogWriterThread({
      natsServers: nats.url, natsReplicas: 1, clickhouseServerUrl: clickhouse.url, database: db.name, timing: FAST_WRITER,
      jobs: { listUnfinished: async () => (asked++, [erasing]) },
      onError: (error) => errors.push(error),
    });
    await thread.start();
    closing.push(() => thread.stop());
    await node().commit({ events: [eventRow(1), eventRow(2), eventRow(3)], rejects: [] });
    await expect.poll(async () => (await log.manager().streams.info('EVENTS')).state.messages, WAIT).toBe(0);
    expect((await db.query<{ id: string }>('SELECT toString(event_id) AS id FROM events ORDER BY id')).map((r) => r.id)).toEqual([eventRow(1).eventId, eventRow(3).eventId]);
    expect(asked).toBeGreaterThan(0);
    await thread.stop();
    // Stopped: later events wait in the stream.
    await node().commit({ events: [eventRow(4)], rejects: [] });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await count(db)).toBe(2);
    expect(errors).toEqual([]);
  });

  /** Events of users 1, 2 and 3 through a writer thread while u-2 is being erased, whose first question for the jobs `firstAnswer` answers. */
  async function erasureThroughThread(firstAnswer: () => Promise<DeletionJob[]>, settings: { jobsTimeoutMs?: number } = {}) {
    const { log, db, node, writer: inProcess } = await pipeline();
    await inProcess.stop();
    const erasing = {
      id: 'job-1', tenantSeq: 1, userHash: hashUserId('u-2'), status: 'pending', requestedAt: Date.now(), completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null,
    } as DeletionJob;
    let asked = 0;
    const errors: unknown[] = [];
    const thread = new EventLogWriterThread({
      natsServers: nats.url, natsReplicas: 1, clickhouseServerUrl: clickhouse.url, database: db.name, timing: FAST_WRITER, ...settings,
      jobs: { listUnfinished: async () => (++asked === 1 ? firstAnswer() : [erasing]) },
      onError: (error) => errors.push(error),
    });
    await thread.start();
    closing.push(() => thread.stop());
    await node().commit({ events: [eventRow(1), eventRow(2), eventRow(3)], rejects: [] });
    await expect.poll(async () => (await log.manager().streams.info('EVENTS')).state.messages, WAIT).toBe(0);
    const ids = (await db.query<{ id: string }>('SELECT toString(event_id) AS id FROM events ORDER BY id')).map((r) => r.id);
    return { ids, asked, errors };
  }

  it('writer thread: a batch whose deletion jobs could not be read is given back, not written as if nobody were being erased', async () => {
    const { ids, asked, errors } = await erasureThroughThread(async () => Promise.reject(new Error('PostgreSQL is away')));
    expect(ids).toEqual([eventRow(1).eventId, eventRow(3).eventId]);
    expect(asked).toBeGreaterThan(1);
    expect(errors).toContainEqual(expect.objectContaining({ message: expect.stringContaining('PostgreSQL is away') }));
  });

  it('writer thread: a batch whose question for the deletion jobs is not answered in time is given back', async () => {
    const { ids, asked, errors } = await erasureThroughThread(() => new Promise<DeletionJob[]>(() => {}), { jobsTimeoutMs: 300 });
    expect(ids).toEqual([eventRow(1).eventId, eventRow(3).eventId]);
    expect(asked).toBeGreaterThan(1);
    expect(errors).toContainEqual(expect.objectContaining({ code: 'storage_unavailable', message: expect.stringContaining('deletion jobs') }));
  });

  /** A writer thread over a fresh stream and database (the in-process writer stopped), and what shows it wrote. */
  async function threadPipeline() {
    const { db, node, writer: inProcess } = await pipeline();
    await inProcess.stop();
    const errors: unknown[] = [];
    const thread = new EventLogWriterThread({
      natsServers: nats.url, natsReplicas: 1, clickhouseServerUrl: clickhouse.url, database: db.name, timing: FAST_WRITER,
      jobs: { listUnfinished: async () => [] },
      onError: (error) => errors.push(error),
    });
    closing.push(() => thread.stop());
    /** How many events are stored some time after one more is committed. */
    const storedAfterCommit = async () => {
      await node().commit({ events: [eventRow(1)], rejects: [] });
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return count(db);
    };
    return { thread, errors, storedAfterCommit };
  }

  it('writer thread: stopped while it starts, it ends and writes nothing', async () => {
    const { thread, storedAfterCommit } = await threadPipeline();
    const starting = thread.start();
    await thread.stop();
    await starting;
    expect(await storedAfterCommit()).toBe(0);
  });

  it('writer thread: stopped while it is started again after an unexpected end, it ends and writes nothing', async () => {
    const { thread, errors, storedAfterCommit } = await threadPipeline();
    await thread.start();
    // An unexpected end, as a crash of the thread would be (the thread has no way to be made to crash).
    await (thread as unknown as { worker: Worker }).worker.terminate();
    await expect.poll(() => errors.map(String).join('\n'), WAIT).toContain('it is started again');
    // Past the retry delay (200 ms): the restart has created its thread, which takes longer than that to start.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await thread.stop();
    expect(await storedAfterCommit()).toBe(0);
  });
});
