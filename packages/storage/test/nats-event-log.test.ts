import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { SvcError } from '@svc/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  connectNats,
  DuckDbDatabase,
  DuckDbDeletionStore,
  DuckDbEventStore,
  hashUserId,
  PipelineErasureStore,
  EVENTS_STREAM,
  WRITER_CONSUMER,
  EventLog,
  EventLogWriter,
  JetStreamEventStore,
  type CommitBatch,
  type CommitOutcome,
  type EventLogWriterOptions,
  type StoredEventKey,
  type EventRow,
  type EventStore,
  type NewDelivery,
} from '../src';
import { sweepAckedMessages } from '../src/nats/acked-message-sweep';
import { decodeEvents } from '../src/encoded-events';
import { fromInsertLine } from '../src/clickhouse/event-sql';
import { decodeEntry } from '../src/nats/event-log-chunks';
import { deliveryOf, eventRow, rejectRow } from './event-log-rows';
import { natsAvailable, startNats, type NatsServer } from './nats-server';
import { startStallingProxy } from './stalling-proxy';

const available = natsAvailable();
/** Short waits so that failures and redeliveries show within a test. */
const FAST = { publishTimeoutMs: 1_000 };
const FAST_WRITER = { batchWaitMs: 1_000, retryDelayMs: 200, ackWaitMs: 2_000 };
const WAIT = { timeout: 20_000, interval: 50 };

describe.skipIf(!available)('events through the JetStream stream EVENTS', () => {
  let nats: NatsServer;
  const connections: NatsConnection[] = [];
  const writers: EventLogWriter[] = [];
  const databases: DuckDbDatabase[] = [];

  beforeAll(async () => {
    nats = await startNats();
  });
  afterAll(async () => {
    await nats?.stop();
  });
  afterEach(async () => {
    await Promise.all(writers.splice(0).map((w) => w.stop()));
    const admin = await connectNats(nats.url);
    await (await jetstreamManager(admin)).streams.delete(EVENTS_STREAM).catch(() => undefined);
    await admin.close();
    await Promise.all(connections.splice(0).map((c) => c.close().catch(() => undefined)));
    await Promise.all(databases.splice(0).map((db) => db.close()));
  });

  async function connection(): Promise<NatsConnection> {
    const nc = await connectNats(nats.url, { reconnectWaitMs: 100 });
    connections.push(nc);
    return nc;
  }

  async function openLog(options: Parameters<typeof EventLog.open>[1] = {}): Promise<EventLog> {
    return EventLog.open(await connection(), { ...FAST, ...options });
  }

  async function duckDbSink(): Promise<DuckDbEventStore> {
    return new DuckDbEventStore(await duckDb());
  }

  async function duckDb(): Promise<DuckDbDatabase> {
    const db = await DuckDbDatabase.open(mkdtempSync(join(tmpdir(), 'svc-nats-sink-')));
    databases.push(db);
    return db;
  }

  async function startWriter(log: EventLog, options: Partial<EventLogWriterOptions> & { sink: EventStore }): Promise<EventLogWriter> {
    const writer = new EventLogWriter(log, { enqueueDeliveries: async () => {}, onError: () => {}, ...FAST_WRITER, ...options });
    await writer.start();
    writers.push(writer);
    return writer;
  }

  /** A DuckDB sink that records the number of events of each commit it is given. */
  async function countingSink(): Promise<{ duckDb: EventStore; commits: number[]; counting: EventStore }> {
    const duckDb = await duckDbSink();
    const commits: number[] = [];
    const counting: EventStore = new Proxy(duckDb, {
      get(target, property, receiver) {
        if (property !== 'commit') return Reflect.get(target, property, receiver) as unknown;
        return (batch: CommitBatch) => (commits.push(batch.events.length), target.commit(batch));
      },
    });
    return { duckDb, commits, counting };
  }

  async function streamMessages(log: EventLog): Promise<number> {
    return (await log.manager().streams.info(EVENTS_STREAM)).state.messages;
  }

  const storedIds = async (sink: EventStore, tenantSeq = 1) =>
    (await sink.queryEvents({ tenantSeq }, { limit: 10_000 })).map((e) => e.eventId).sort();
  const rows = (from: number, count: number, fields: Partial<EventRow> = {}) => Array.from({ length: count }, (_, i) => eventRow(from + i, fields));

  it('creates the stream once when several nodes start together, as a work queue on disk, and applies a changed duplicate window', async () => {
    const logs = await Promise.all([openLog(), openLog(), openLog()]);
    const config = (await logs[0]!.manager().streams.info(EVENTS_STREAM)).config;
    expect([config.subjects, config.retention, config.storage, config.num_replicas]).toEqual([['svc.events.>'], 'workqueue', 'file', 1]);
    expect(config.duplicate_window).toBe(120_000 * 1_000_000);
    const changed = await openLog({ duplicateWindowMs: 30_000 });
    expect((await changed.manager().streams.info(EVENTS_STREAM)).config.duplicate_window).toBe(30_000 * 1_000_000);
  });

  it('resolves a commit only once the stream holds the batch, and stores it in the sink through the writer', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const events = rows(1, 20);
    const { inserted } = await store.commit({ events, rejects: [rejectRow(1)] });
    expect(inserted.size).toBe(20);
    // Stored when the commit resolved: the message is there before any writer ran.
    expect(await streamMessages(log)).toBe(1);
    const message = await log.manager().streams.getMessage(EVENTS_STREAM, { seq: await log.position() });
    expect(message!.subject).toBe('svc.events.1');
    expect(decodeEntry(message!.data).events.flatMap((block) => decodeEvents(block, fromInsertLine))).toEqual(events);

    const sink = await duckDbSink();
    await startWriter(log, { sink });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(await storedIds(sink)).toEqual(events.map((e) => e.eventId).sort());
    expect((await sink.listRejected(1, { limit: 10 })).map((r) => r.id)).toEqual([rejectRow(1).id]);
  });

  it('stores a batch retried on another node once, and answers the retry with nothing inserted', async () => {
    const nodeA = new JetStreamEventStore(await openLog({ maxBodyBytes: 3_000 }), await duckDbSink());
    const logB = await openLog({ maxBodyBytes: 3_000 });
    const nodeB = new JetStreamEventStore(logB, await duckDbSink());
    const events = rows(1, 40);
    const batch: CommitBatch = { events, rejects: [], deliveries: events.map((e) => deliveryOf(e)) };
    expect((await nodeA.commit(batch)).inserted.size).toBe(40);
    const messages = await streamMessages(logB);
    expect(messages).toBeGreaterThan(1);
    // Another node (empty cache): the stream's PubAck says duplicate. The same node: its cache.
    expect((await nodeB.commit(batch)).inserted.size).toBe(0);
    expect((await nodeA.commit(batch)).inserted.size).toBe(0);
    expect(await streamMessages(logB)).toBe(messages);

    const sink = await duckDbSink();
    const enqueued: NewDelivery[] = [];
    await startWriter(logB, { sink, enqueueDeliveries: async (d) => void enqueued.push(...d) });
    await vi.waitFor(async () => expect(await streamMessages(logB)).toBe(0), WAIT);
    expect(await sink.countEvents({ tenantSeq: 1 })).toBe(40);
    expect(enqueued.map((d) => d.id).sort()).toEqual(batch.deliveries!.map((d) => d.id).sort());
  });

  it('splits a batch per tenant under the message size and stores every event', async () => {
    const log = await openLog({ maxBodyBytes: 2_500 });
    const store = new JetStreamEventStore(log, await duckDbSink());
    const events = [...rows(1, 30), ...rows(1_001, 30, { tenantSeq: 2 })];
    expect((await store.commit({ events, rejects: [] })).inserted.size).toBe(60);
    const subjects = new Set<string>();
    for (let seq = 1; seq <= (await log.position()); seq++) {
      const message = await log.manager().streams.getMessage(EVENTS_STREAM, { seq });
      expect(message!.data.byteLength).toBeLessThanOrEqual(2_500);
      subjects.add(message!.subject);
    }
    expect([...subjects].sort()).toEqual(['svc.events.1', 'svc.events.2']);
    const sink = await duckDbSink();
    await startWriter(log, { sink });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(await sink.countEvents({ tenantSeq: 1 })).toBe(30);
    expect(await sink.countEvents({ tenantSeq: 2 })).toBe(30);
  });

  it('writes many messages with few sink commits', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    for (let batch = 0; batch < 30; batch++) await store.commit({ events: rows(batch * 10 + 1, 10), rejects: [] });
    const { duckDb, commits, counting } = await countingSink();
    await startWriter(log, { sink: counting });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(await duckDb.countEvents({ tenantSeq: 1 })).toBe(300);
    expect(commits.length).toBeLessThanOrEqual(2);
  });

  it('gathers more messages than one fetch brings (one request each) into one sink commit', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    // 450 requests of 2 events: one message each, over four fetches of at most 100.
    await Promise.all(Array.from({ length: 450 }, (_, i) => store.commit({ events: rows(i * 2 + 1, 2), rejects: [] })));
    const { duckDb, commits, counting } = await countingSink();
    await startWriter(log, { sink: counting });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(await duckDb.countEvents({ tenantSeq: 1 })).toBe(900);
    expect(commits.length).toBeLessThanOrEqual(2);
  });

  it('writes a batch as soon as the stream has nothing more to give, not after the batch wait', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    for (let batch = 0; batch < 5; batch++) await store.commit({ events: rows(batch * 10 + 1, 10), rejects: [] });
    const { duckDb, commits, counting } = await countingSink();
    const started = performance.now();
    await startWriter(log, { sink: counting, batchWaitMs: 10_000 });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(commits).toEqual([50]);
    // A message that comes later is written at once too.
    const sent = performance.now();
    await store.commit({ events: rows(100, 1), rejects: [] });
    await vi.waitFor(async () => expect(await duckDb.countEvents({ tenantSeq: 1 })).toBe(51), WAIT);
    expect(performance.now() - sent).toBeLessThan(5_000);
  });

  it('ends by itself, and says so through `ended`, when its connection closes without a stop', async () => {
    const log = await openLog();
    const writer = await startWriter(log, { sink: await duckDbSink() });
    let ended = false;
    void writer.ended.then(() => (ended = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(ended).toBe(false);
    await log.connection.close();
    await vi.waitFor(() => expect(ended).toBe(true), WAIT);
  });

  it('drops a message nobody can decode, reporting it, and stores the others', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    await store.commit({ events: rows(1, 5), rejects: [] });
    await jetstream(log.connection).publish('svc.events.1', 'not an entry');
    await store.commit({ events: rows(6, 5), rejects: [] });
    const sink = await duckDbSink();
    const errors: unknown[] = [];
    await startWriter(log, { sink, onError: (error) => errors.push(error) });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(await sink.countEvents({ tenantSeq: 1 })).toBe(10);
    expect(errors.map(String)).toEqual([expect.stringMatching(/EVENTS message 2 cannot be decoded/)]);
  });

  it('leaves a message of a newer format in the stream for a writer of a later version, reporting it, and stores the others', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    await store.commit({ events: rows(1, 5), rejects: [] });
    await jetstream(log.connection).publish('svc.events.1', '{"v":3,"tenantSeq":1,"parts":[]}\n{"a":1}\n');
    await store.commit({ events: rows(6, 5), rejects: [] });
    const sink = await duckDbSink();
    const errors: unknown[] = [];
    await startWriter(log, { sink, onError: (error) => errors.push(error), newerFormatDelayMs: 300 });
    await vi.waitFor(async () => expect(await sink.countEvents({ tenantSeq: 1 })).toBe(10), WAIT);
    // Offered again after its delay, and given back each time: never dropped.
    await vi.waitFor(() => expect(errors.length).toBeGreaterThanOrEqual(2), WAIT);
    expect(await streamMessages(log)).toBe(1);
    expect(errors.map(String).every((e) => /EVENTS message 2 is of a newer format \(3\)/.test(e))).toBe(true);
  });

  it('answers storage_unavailable with Retry-After while NATS is down, and stores again once it is back', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    await nats.kill();
    try {
      const failed = await store.commit({ events: rows(1, 5), rejects: [] }).then(() => null, (error: unknown) => error);
      expect(failed).toBeInstanceOf(SvcError);
      expect((failed as SvcError).code).toBe('storage_unavailable');
      expect((failed as SvcError).headers?.['retry-after']).toMatch(/^\d+$/);
    } finally {
      await nats.restart();
    }
    // The client reconnects by itself; the retry of the same batch is stored.
    await vi.waitFor(async () => expect((await store.commit({ events: rows(1, 5), rejects: [] })).inserted.size).toBe(5), WAIT);
  });

  it('answers storage_unavailable when JetStream does not answer in time, and acknowledges nothing', async () => {
    const proxy = await startStallingProxy(nats.port);
    try {
      const nc = await connectNats(proxy.url);
      connections.push(nc);
      const log = await EventLog.open(nc, { publishTimeoutMs: 500 });
      const store = new JetStreamEventStore(log, await duckDbSink());
      proxy.stall();
      const started = performance.now();
      const failed = await store.commit({ events: rows(1, 5), rejects: [] }).then(() => null, (error: unknown) => error);
      expect((failed as SvcError).code).toBe('storage_unavailable');
      expect(performance.now() - started).toBeLessThan(5_000);
      proxy.resume();
      // The stream got the message after all; the retry is answered as a duplicate, stored once.
      expect((await store.commit({ events: rows(1, 5), rejects: [] })).inserted.size).toBe(0);
      expect(await streamMessages(log)).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('keeps writing after NATS restarts, and loses none of the events it acknowledged before', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const sink = await duckDbSink();
    await store.commit({ events: rows(1, 10), rejects: [] });
    await nats.kill();
    await nats.restart();
    await startWriter(await openLog(), { sink });
    await vi.waitFor(async () => expect((await store.commit({ events: rows(11, 10), rejects: [] })).inserted.size).toBe(10), WAIT);
    await vi.waitFor(async () => expect(await sink.countEvents({ tenantSeq: 1 })).toBe(20), WAIT);
    // The writer outlives a second outage while it is running.
    await nats.kill();
    await nats.restart();
    await vi.waitFor(async () => expect((await store.commit({ events: rows(21, 10), rejects: [] })).inserted.size).toBe(10), WAIT);
    await vi.waitFor(async () => expect(await sink.countEvents({ tenantSeq: 1 })).toBe(30), WAIT);
    // An ack sent as NATS went down is lost: its message comes again after the ack wait, is
    // found stored, and acknowledged then. The writer has nothing left to deliver or to be
    // acknowledged, and nothing is stored twice.
    await vi.waitFor(async () => {
      const consumer = await log.manager().consumers.info(EVENTS_STREAM, WRITER_CONSUMER);
      expect([consumer.num_pending, consumer.num_ack_pending]).toEqual([0, 0]);
    }, WAIT);
    expect(await sink.countEvents({ tenantSeq: 1 })).toBe(30);
    // A killed nats-server 2.9 may keep messages the writer acknowledged (its deletes are
    // written lazily): the pipeline's sweep removes them, and then nothing stays in the stream.
    await sweepAckedMessages(log.manager(), { stream: EVENTS_STREAM, consumer: WRITER_CONSUMER });
    expect(await streamMessages(log)).toBe(0);
  });

  it('delivers a batch again when a writer dies before its ack, and the sink keeps each event once', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const events = rows(1, 25);
    await store.commit({ events, rejects: [], deliveries: events.map((e) => deliveryOf(e)) });
    const sink = await duckDbSink();

    // Writer A stores the batch and dies while enqueueing its deliveries, before the ack.
    const logA = await openLog();
    let dying!: () => void;
    const stuck = new Promise<void>((resolve) => (dying = resolve));
    let reachedQueue = false;
    await startWriter(logA, {
      sink,
      enqueueDeliveries: async () => {
        reachedQueue = true;
        await stuck;
        throw new Error('killed');
      },
    });
    await vi.waitFor(() => expect(reachedQueue).toBe(true), WAIT);
    expect(await sink.countEvents({ tenantSeq: 1 })).toBe(25);
    await logA.connection.close();
    dying();

    const enqueued: NewDelivery[] = [];
    await startWriter(await openLog(), { sink, enqueueDeliveries: async (d) => void enqueued.push(...d) });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(enqueued).toHaveLength(25);
    expect(await storedIds(sink)).toEqual(events.map((e) => e.eventId).sort());
  });

  it('stores once what a writer process killed between its insert and its ack had stored', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-nats-killed-'));
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./writer-process.ts', import.meta.url)), nats.url, dataDir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await vi.waitFor(() => expect(output).toContain('started'), WAIT);
      const events = rows(1, 20);
      await store.commit({ events, rejects: [], deliveries: events.map((e) => deliveryOf(e)) });
      await vi.waitFor(() => expect(output).toContain('stored 20'), WAIT);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    expect(await streamMessages(log)).toBe(1);

    const db = await DuckDbDatabase.open(dataDir);
    databases.push(db);
    const sink = new DuckDbEventStore(db);
    expect(await sink.countEvents({ tenantSeq: 1 })).toBe(20);
    const enqueued: NewDelivery[] = [];
    await startWriter(log, { sink, enqueueDeliveries: async (d) => void enqueued.push(...d) });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(await storedIds(sink)).toEqual(rows(1, 20).map((e) => e.eventId).sort());
    expect(enqueued).toHaveLength(20);
  });

  it('keeps a batch whose insert outlasts the ack wait from going to a second writer', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const duckDb = await duckDbSink();
    const committed: string[] = [];
    const slow: EventStore = new Proxy(duckDb, {
      get(target, property, receiver) {
        if (property !== 'commit') return Reflect.get(target, property, receiver) as unknown;
        return async (batch: CommitBatch): Promise<CommitOutcome> => {
          committed.push(...batch.events.map((e) => e.eventId));
          await new Promise((resolve) => setTimeout(resolve, 3_500));
          return target.commit(batch);
        };
      },
    });
    const ackWaitMs = 1_500;
    await startWriter(await openLog(), { sink: slow, ackWaitMs });
    await startWriter(await openLog(), { sink: slow, ackWaitMs });
    await store.commit({ events: rows(1, 10), rejects: [] });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(committed.sort()).toEqual(rows(1, 10).map((e) => e.eventId).sort());
    expect(await duckDb.countEvents({ tenantSeq: 1 })).toBe(10);
  });

  it('lets the stream grow while the sink is down and catches up afterwards, losing nothing', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const duckDb = await duckDbSink();
    let down = true;
    const failures = { count: 0 };
    const sink = failingWhile(duckDb, () => down, failures);
    await startWriter(log, { sink });
    for (let batch = 0; batch < 10; batch++) await store.commit({ events: rows(batch * 100 + 1, 50), rejects: [] });
    await vi.waitFor(() => expect(failures.count).toBeGreaterThanOrEqual(2), WAIT);
    expect(await streamMessages(log)).toBe(10);
    expect(await duckDb.countEvents({ tenantSeq: 1 })).toBe(0);
    down = false;
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(await duckDb.countEvents({ tenantSeq: 1 })).toBe(500);
  });

  it('drops the rows and deliveries a user sent before their erasure under way, and stores the others', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const kept = rows(1, 10);
    const all = rows(101, 10, { userId: 'Erased' });
    // The erasure was requested after the first five were received: the last five came later.
    const requestedAt = all[4]!.receivedAtMs;
    const erased = all.slice(0, 5);
    const cameBack = all.slice(5);
    // Same id, other case: another user.
    const sameLetters = rows(201, 3, { userId: 'erased' });
    const events = [...kept, ...erased, ...cameBack, ...sameLetters];
    await store.commit({ events, rejects: [rejectRow(1, { userId: 'Erased' }), rejectRow(2, { userId: 'u-1' })], deliveries: events.map((e) => deliveryOf(e)) });
    const sink = await duckDbSink();
    const enqueued: NewDelivery[] = [];
    await startWriter(log, {
      sink,
      erasingSince: async (tenantSeq, userId) => (tenantSeq === 1 && userId === 'Erased' ? requestedAt : null),
      enqueueDeliveries: async (d) => void enqueued.push(...d),
    });
    await vi.waitFor(async () => expect(await streamMessages(log)).toBe(0), WAIT);
    expect(await storedIds(sink)).toEqual([...kept, ...cameBack, ...sameLetters].map((e) => e.eventId).sort());
    expect((await sink.listRejected(1, { limit: 10 })).map((r) => r.id)).toEqual([rejectRow(2).id]);
    expect(enqueued.map((d) => d.eventId).sort()).toEqual([...kept, ...cameBack, ...sameLetters].map((e) => e.eventId).sort());
  });

  it('tells when the writer has passed a stream position, so an erasure can wait for it', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    expect(await log.position()).toBe(0);
    expect(await log.passed(0)).toBe(true);
    await store.commit({ events: rows(1, 10), rejects: [] });
    await store.commit({ events: rows(11, 10, { tenantSeq: 2 }), rejects: [] });
    const position = await log.position();
    expect(position).toBe(2);
    expect(await log.passed(position)).toBe(false);
    await expect(log.waitUntilPassed(position, AbortSignal.timeout(300), 20)).rejects.toThrow();

    const sink = await duckDbSink();
    let passed = false;
    const waiting = log.waitUntilPassed(position, undefined, 20).then(() => (passed = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(passed).toBe(false);
    await startWriter(log, { sink });
    await waiting;
    // Everything up to the position is in the sink by then.
    expect(await sink.countEvents({ tenantSeq: 1 })).toBe(10);
    expect(await sink.countEvents({ tenantSeq: 2 })).toBe(10);
    // Later messages do not hold back an earlier position.
    await writers.pop()!.stop();
    await store.commit({ events: rows(21, 1), rejects: [] });
    expect(await log.passed(position)).toBe(true);
    expect(await log.passed(await log.position())).toBe(false);
  });

  it('erases a user only after the writer has stored what the stream held when the erasure began', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const db = await duckDb();
    const sink = new DuckDbEventStore(db);
    const user = 'Leaving';
    await store.commit({ events: [...rows(1, 6, { userId: user }), ...rows(11, 4)], rejects: [] });
    const job = { tenantSeq: 1, userHash: hashUserId(user) };

    // The writer is not running: the erasure cannot be sure of the stream and is tried again later.
    const impatient = new PipelineErasureStore(log, new DuckDbDeletionStore(db), 300);
    const failed = await impatient.erase(job, user).then(() => null, (error: unknown) => error);
    expect((failed as SvcError).code).toBe('storage_unavailable');

    const erasure = new PipelineErasureStore(log, new DuckDbDeletionStore(db));
    const erasing = erasure.erase(job, user);
    await startWriter(log, { sink });
    expect(await erasing).toEqual({ deletedEvents: 6, deletedRejects: 0 });
    expect(await sink.countEvents({ tenantSeq: 1, userId: user })).toBe(0);
    expect(await sink.countEvents({ tenantSeq: 1 })).toBe(4);
  });

  it('stops at once while both the write of a batch and the fetch of the next one wait to retry', async () => {
    const log = await openLog();
    await new JetStreamEventStore(log, await duckDbSink()).commit({ events: rows(1, 3), rejects: [] });
    const failures = { count: 0 };
    const writer = new EventLogWriter(log, {
      sink: failingWhile(await duckDbSink(), () => true, failures), enqueueDeliveries: async () => {}, onError: () => {}, ...FAST_WRITER, retryDelayMs: 60_000,
    });
    await writer.start();
    await vi.waitFor(() => expect(failures.count).toBe(1), WAIT);
    // The next fetch fails too (its consumer is gone), and waits to retry as well.
    await log.manager().consumers.delete(EVENTS_STREAM, 'writer');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const started = Date.now();
    await writer.stop();
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('enqueues deliveries after the sink stored their events, then tells what it stored', async () => {
    const log = await openLog();
    const store = new JetStreamEventStore(log, await duckDbSink());
    const sink = await duckDbSink();
    const storedBeforeQueue: number[] = [];
    const onStored: StoredEventKey[][] = [];
    await startWriter(log, {
      sink,
      enqueueDeliveries: async () => void storedBeforeQueue.push(await sink.countEvents({ tenantSeq: 1 })),
      onStored: (stored) => onStored.push(stored),
    });
    const events = [...rows(1, 4), ...rows(11, 2, { tenantSeq: 2 })];
    await store.commit({ events, rejects: [], deliveries: events.filter((e) => e.tenantSeq === 1).map((e) => deliveryOf(e)) });
    await vi.waitFor(() => expect(onStored.flat()).toHaveLength(6), WAIT);
    expect(storedBeforeQueue).toEqual([4]);
    expect(onStored.flat().map((key) => key.tenantSeq).sort()).toEqual([1, 1, 1, 1, 2, 2]);
  });
});

/** An EventStore whose commits fail while `down()` says so, as a sink outage would. */
function failingWhile(inner: EventStore, down: () => boolean, failures: { count: number }): EventStore {
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property !== 'commit') return Reflect.get(target, property, receiver) as unknown;
      return async (batch: CommitBatch): Promise<CommitOutcome> => {
        if (down()) {
          failures.count++;
          throw new SvcError('storage_unavailable', 'sink down');
        }
        return target.commit(batch);
      };
    },
  });
}
