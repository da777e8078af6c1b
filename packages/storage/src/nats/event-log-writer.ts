import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { eventKey, type EventStore, type NewDelivery } from '../event-store';
import { SvcError } from '@svc/protocol';
import { decodeEvents, isEncodedEventSink, isSplitEncodedEventSink } from '../encoded-events';
import { setAsideRow, storeOrSetAside, type WriterRows } from './poison-rows';
import { fromInsertLine } from '../clickhouse/event-sql';
import { decodeEntry, NewerEventLogFormatError, type EventLogEntry } from './event-log-chunks';
import { withoutErasingUsers, type ErasingSince } from './erasing-users';
import type { EventLog } from './event-log';
import { natsFailure } from './nats-failure';
import { WRITER_CONSUMER, writerConsumer } from './writer-consumer';
import { NOTHING_INSERTING, prepareRows, withHeldRows, type HeldRows, type InsertingRows, type StoredBefore } from './writer-batch';

/** Most messages one fetch asks for. */
const FETCH_MAX_MESSAGES = 1_000;
/**
 * Bytes a fetch counts per message at least: with the server's `max_payload` of 1 MiB, a fetch
 * sized for the batch's room holds at most room / 512 KiB messages, so even messages of the
 * largest size stay within twice the room (and well within the client's 64 MiB buffer).
 */
const FETCH_MESSAGE_BUDGET_BYTES = 512 * 1024;
/**
 * Longest a batch gathers messages before it is written; it is written sooner when the stream
 * has no more to give (or the batch is full).
 */
export const WRITER_BATCH_WAIT_MS = 1_000;
/**
 * Least time between the starts of two inserts of one writer: while the stream holds little,
 * batches are written as soon as they are gathered, and this keeps their parts few enough for
 * ClickHouse's merges (at most 5 inserts a second per writer).
 */
export const WRITER_MIN_INSERT_INTERVAL_MS = 200;
/**
 * Most message bytes in one batch: about 10^4–10^5 event rows, well under the 64 MiB a NATS
 * server lets a client fall behind before it drops it as a slow consumer (a fetch of 80 MB was
 * cut off and waited for redelivery). The client then also caps a fetch at 100 messages: it
 * takes a byte or a message limit, not both.
 */
export const WRITER_BATCH_BYTES = 16 * 2 ** 20;
/** How long a delivered message may stay unacknowledged before JetStream gives it to a writer again. */
export const WRITER_ACK_WAIT_MS = 60_000;
/** Pause after a failed batch (sink or queue down) before its messages come again. */
export const WRITER_RETRY_DELAY_MS = 5_000;
/**
 * How long a message of a newer format (see NewerEventLogFormatError) waits before it is offered
 * again: long enough that the writers of the newer version, once running, take it first.
 */
export const WRITER_NEWER_FORMAT_DELAY_MS = 60_000;
/** One batch the writer wrote: its rows (events and rejects) and how long the sink took to insert them. */
export interface WriterBatchReport {
  rows: number;
  insertMs: number;
}

/** An event the writer stored. */
export interface StoredEventKey {
  tenantSeq: number;
  eventId: string;
}

export interface EventLogWriterOptions {
  /** Where events and rejects are written (ClickHouse's store in production). */
  sink: EventStore;
  /** Enqueues the webhook deliveries of the stored events (the WEBHOOKS stream); after the sink, before the ack. */
  enqueueDeliveries: (deliveries: NewDelivery[]) => Promise<void>;
  /** Default: nobody is being erased. */
  erasingSince?: ErasingSince;
  /** Called with the events each batch stored (tenant and lower-case id), after the ack. */
  onStored?: (stored: StoredEventKey[]) => void;
  /** A failed batch or fetch (it is retried). Default: written to stderr. */
  onError?: (error: unknown) => void;
  /** Called after each batch written and acknowledged, with its rows and the time of its insert (for /metrics). */
  onBatch?: (batch: WriterBatchReport) => void;
  /** Default WRITER_BATCH_WAIT_MS (JetStream's minimum is 1,000). */
  batchWaitMs?: number;
  /** Default WRITER_BATCH_BYTES. */
  batchBytes?: number;
  /** Default WRITER_MIN_INSERT_INTERVAL_MS. */
  minInsertIntervalMs?: number;
  /** Default WRITER_ACK_WAIT_MS. */
  ackWaitMs?: number;
  /** Default WRITER_RETRY_DELAY_MS. */
  retryDelayMs?: number;
  /** Default WRITER_NEWER_FORMAT_DELAY_MS. */
  newerFormatDelayMs?: number;
}

/**
 * Moves events from the stream EVENTS into the sink. Every node runs one; they share the
 * durable consumer WRITER_CONSUMER, so each message goes to one writer at a time. A batch
 * (about WRITER_BATCH_WAIT_MS or WRITER_BATCH_BYTES) is written with one `sink.commit`, its
 * webhook deliveries enqueued, and only then acknowledged (which removes it from the stream).
 * When the sink or the queue is unavailable (`storage_unavailable`), nothing is acknowledged:
 * the messages come again after WRITER_RETRY_DELAY_MS (to any writer) and the stream grows
 * meanwhile, as after any failure that concerns the whole database (see `isRowRefusal`). When
 * the sink refuses the data of rows instead, the writer finds them by
 * writing halves of the batch, writes the others and keeps each refused row in the quarantine
 * (`event_not_storable`, see poison-rows.ts), so that one bad row never blocks the stream,
 * later events or erasures. Events go to a sink that takes encoded events (ClickHouse's) as
 * the lines the nodes encoded, without parsing them; to another sink as rows. A writer that dies
 * before its ack leaves its messages to be delivered again after the ack wait; the sink drops
 * the duplicates (ReplacingMergeTree, or DuckDB's unique key) and the queue drops deliveries
 * it already has by their id.
 */
export class EventLogWriter {
  /** Running average of a message's size, which sizes the fetches. */
  private averageBytes = FETCH_MESSAGE_BUDGET_BYTES;
  private stopping = false;
  private fetching: ConsumerMessages | null = null;
  private running: Promise<void> | null = null;
  /** Resolves when `stop` is called. */
  private readonly stopped: Promise<void>;
  private wake!: () => void;
  /** Messages fetched and neither acknowledged nor given back yet. */
  private readonly held = new Set<JsMsg>();
  private progress: ReturnType<typeof setInterval> | null = null;
  /** Rows the sink refused, kept in the quarantine since the start (`event_not_storable`). */
  setAsideRows = 0;

  constructor(
    private readonly log: EventLog,
    private readonly options: EventLogWriterOptions,
  ) {
    this.stopped = new Promise<void>((resolve) => (this.wake = resolve));
  }

  /** Creates (or updates) the shared consumer and starts writing; `storage_unavailable` when JetStream does not answer. */
  async start(): Promise<void> {
    const consumer = await writerConsumer(this.log, this.options.ackWaitMs ?? WRITER_ACK_WAIT_MS).catch((error: unknown) => Promise.reject(natsFailure(error, 'start the event writer')));
    // Held messages must not outlive the ack wait, or JetStream hands them to another writer:
    // those waiting in a fetch, in the next batch, or in a long insert.
    this.progress = setInterval(() => {
      try {
        for (const message of this.held) message.working();
      } catch {
        // The connection is gone: the messages come again after the ack wait anyway.
      }
    }, (this.options.ackWaitMs ?? WRITER_ACK_WAIT_MS) / 3);
    this.running = this.run(consumer).catch((error: unknown) => {
      if (this.progress) clearInterval(this.progress);
      this.report(new Error('The event log writer stopped.', { cause: error }));
    });
  }

  /**
   * Resolves when the writer has ended: after `stop`, or by itself when its connection closed or
   * it failed (reported through `onError`); never rejects. Its owner starts another one then.
   */
  get ended(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Stops fetching, finishes the batch in hand and resolves. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.fetching?.stop();
    this.wake();
    await this.running;
  }

  private async run(consumer: Consumer): Promise<void> {
    const nothing: Promise<Fetched> = Promise.resolve({ messages: [], dry: true });
    let next: Promise<Fetched> | null = this.fetch(consumer);
    let inserting = null as { rows: InsertingRows; done: Promise<StoredBefore> } | null;
    let lastInsertMs = -Infinity;
    // A closed connection stays closed (the client reconnects by itself until it is closed).
    while (!this.stopping && !this.log.connection.isClosed()) {
      const fetched: Fetched = await (next ?? nothing);
      const { messages, dry } = fetched;
      // With a backlog, three batches at a time: the next one fetched while this one is decoded
      // and looked up and the one before inserted. When the stream ran dry, the next fetch
      // starts with this batch's insert instead, so that it takes what comes meanwhile.
      next = this.stopping ? nothing : dry ? null : this.fetch(consumer);
      const prepared: PreparedBatch | null = messages.length ? await this.prepare(messages, inserting?.rows ?? NOTHING_INSERTING) : null;
      const storedBefore: StoredBefore = inserting ? await inserting.done : null;
      inserting = null;
      const ready = prepared && (await this.withHeld(prepared, storedBefore));
      next ??= this.stopping ? nothing : this.fetch(consumer);
      if (!ready) continue;
      await this.pause(lastInsertMs + (this.options.minInsertIntervalMs ?? WRITER_MIN_INSERT_INTERVAL_MS) - performance.now());
      lastInsertMs = performance.now();
      inserting = { rows: ready.inserting, done: this.commit(ready) };
    }
    await inserting?.done;
    // Fetched while stopping: offered to the other writers at once rather than after the ack wait.
    const unwritten = (await (next ?? nothing)).messages;
    this.release(unwritten);
    for (const message of unwritten) {
      try {
        message.nak();
      } catch {
        // The connection is gone: the ack wait gives them back.
      }
    }
    if (this.progress) clearInterval(this.progress);
  }

  /**
   * One batch of messages: what the stream gives until it has no more (each message tells how
   * many wait after it), up to the batch bytes, within the batch wait. The first fetch waits
   * for one message; the next ones ask for no more than the stream holds, so that none waits
   * for its expiry. A fetch with a byte limit ends after 100 messages (the client's cap), and a
   * message is one request: fetches follow one another, so that one insert carries the whole
   * batch (ClickHouse wants few large inserts, not many small ones).
   */
  private async fetch(consumer: Consumer): Promise<Fetched> {
    const messages: JsMsg[] = [];
    const maxBytes = this.options.batchBytes ?? WRITER_BATCH_BYTES;
    const waitMs = this.options.batchWaitMs ?? WRITER_BATCH_WAIT_MS;
    const deadline = Date.now() + waitMs;
    let bytes = 0;
    let largest = 0;
    let pending = 0;
    try {
      do {
        // A count, not a byte limit: a fetch by bytes also waits for its expiry after its 100
        // messages. The count keeps the fetch's bytes within the room left (and the client's
        // buffer) even should every message be as large as a message may be.
        const room = maxBytes - bytes;
        const byBytes = Math.max(1, Math.min(FETCH_MAX_MESSAGES, Math.floor(room / Math.max(2 * this.averageBytes, FETCH_MESSAGE_BUDGET_BYTES))));
        const count = messages.length ? Math.min(byBytes, pending) : 1;
        this.fetching = await consumer.fetch({ max_messages: count, expires: waitMs });
        if (this.stopping) this.fetching.stop();
        for await (const message of this.fetching) {
          messages.push(message);
          this.held.add(message);
          bytes += message.data.length;
          largest = Math.max(largest, message.data.length);
          this.averageBytes += (message.data.length - this.averageBytes) / 16;
          pending = message.info.pending;
        }
        // Room left for at least one more message of the largest size seen.
      } while (!this.stopping && messages.length > 0 && pending > 0 && Date.now() < deadline && maxBytes - bytes > 2 * largest);
    } catch (error) {
      // NATS unreachable or the consumer gone: what came is written, then fetch again.
      if (!messages.length) {
        this.report(error);
        await this.pause();
      }
    } finally {
      this.fetching = null;
    }
    return { messages, dry: pending === 0 };
  }

  /**
   * The batch's rows without those of users being erased; for a sink that looks ids up apart
   * from its insert, also without those stored already or in the batch being inserted
   * (`inserting`). Null when no message decodes or the lookup failed (the messages then come
   * again after the retry delay).
   */
  private async prepare(fetched: JsMsg[], inserting: InsertingRows): Promise<PreparedBatch | null> {
    const decoded = this.decode(fetched);
    if (!decoded.length) return null;
    const messages = decoded.map((d) => d.message);
    try {
      const entry = await withoutErasingUsers(decoded.map((d) => d.entry), this.options.erasingSince);
      const sink = this.options.sink;
      if (isSplitEncodedEventSink(sink)) return { messages, deliveries: entry.deliveries, ...(await prepareRows(entry, sink, inserting)) };
      return { messages, deliveries: entry.deliveries, rows: { events: entry.events, rejects: entry.rejects }, inserting: NOTHING_INSERTING, held: null };
    } catch (error) {
      await this.giveBack(messages, error);
      return null;
    }
  }

  /**
   * The batch with the rows it held for the batch before (see `withHeldRows`) that this one did
   * not store; null when their lookup failed (the messages come again after the retry delay).
   */
  private async withHeld(batch: PreparedBatch, storedBefore: StoredBefore): Promise<PreparedBatch | null> {
    const sink = this.options.sink;
    if (!batch.held?.keys.size && !batch.held?.rejects.length) return batch;
    if (!isSplitEncodedEventSink(sink)) return batch;
    try {
      return { ...batch, ...(await withHeldRows({ ...batch, held: batch.held }, storedBefore, sink)) };
    } catch (error) {
      await this.giveBack(batch.messages, error);
      return null;
    }
  }

  /**
   * Writes one prepared batch, enqueues its deliveries and acknowledges its messages; on failure
   * asks for them again after the retry delay. The keys of the events it stored, or null when
   * it failed.
   */
  private async commit(batch: PreparedBatch): Promise<StoredBefore> {
    const rows = batch.rows;
    try {
      const insertStartMs = performance.now();
      const { inserted, setAsideKeys } = rows.events.length || rows.rejects.length
        ? await storeOrSetAside(rows, (part) => this.store(part, part === rows && isSplitEncodedEventSink(this.options.sink) ? batch.inserting.keys : null), (row, error) => this.setAside(row, error))
        : { inserted: new Set<string>(), setAsideKeys: new Set<string>() };
      const insertMs = performance.now() - insertStartMs;
      // An event set aside in the quarantine was not stored: nobody is told of it.
      const sent = setAsideKeys.size ? batch.deliveries.filter((d) => !setAsideKeys.has(eventKey(d.tenantSeq, d.eventId))) : batch.deliveries;
      if (sent.length) await this.options.enqueueDeliveries(sent);
      for (const message of batch.messages) message.ack();
      this.release(batch.messages);
      await this.log.connection.flush();
      if (inserted.size) this.announce(inserted);
      this.reportBatch(rows, insertMs);
      return inserted;
    } catch (error) {
      await this.giveBack(batch.messages, error);
      return null;
    }
  }

  /** Reports a failed batch and asks for its messages again after the retry delay, then waits that long. */
  private async giveBack(messages: JsMsg[], error: unknown): Promise<void> {
    this.report(error);
    this.release(messages);
    try {
      for (const message of messages) message.nak(this.options.retryDelayMs ?? WRITER_RETRY_DELAY_MS);
    } catch {
      // The connection is gone: the messages come again once the ack wait has passed.
    }
    await this.pause();
  }

  /**
   * The messages whose body decodes. A body of a newer format (a node of a later version wrote
   * it during a rolling upgrade) is given back with a long delay and reported, never dropped:
   * a writer of that version stores it. Only this service publishes to the stream, so any other
   * body is a message nobody can store: it is reported and terminated rather than retried forever.
   */
  private decode(messages: JsMsg[]): { message: JsMsg; entry: EventLogEntry }[] {
    const decoded: { message: JsMsg; entry: EventLogEntry }[] = [];
    for (const message of messages) {
      try {
        decoded.push({ message, entry: decodeEntry(message.data) });
      } catch (error) {
        this.held.delete(message);
        if (error instanceof NewerEventLogFormatError) {
          const delayMs = this.options.newerFormatDelayMs ?? WRITER_NEWER_FORMAT_DELAY_MS;
          this.report(new Error(`EVENTS message ${message.seq} is of a newer format (${error.version}); it is left to a writer of a later version (offered again in ${delayMs} ms).`, { cause: error }));
          try {
            message.nak(delayMs);
          } catch {
            // The connection is gone: the message comes again after the ack wait.
          }
          continue;
        }
        this.report(new Error(`EVENTS message ${message.seq} cannot be decoded; it is dropped.`, { cause: error }));
        try {
          message.term();
        } catch {
          // The connection is gone: the message comes again and is dropped then.
        }
      }
    }
    return decoded;
  }

  /**
   * Writes the rows into the sink: as they were encoded when it takes that, else as rows. The keys
   * of the events it inserted. `keys` are those of a whole batch looked up when it was prepared;
   * null for a part of a batch being split (see storeOrSetAside), which is looked up again: the
   * refused insert of the whole may have stored some of its rows (its events before its rejects).
   */
  private async store({ events, rejects }: WriterRows, keys: Set<string> | null): Promise<Set<string>> {
    const sink = this.options.sink;
    if (keys && isSplitEncodedEventSink(sink)) {
      await sink.insertEncoded({ events, rejects });
      return keys;
    }
    if (isEncodedEventSink(sink)) return (await sink.commitEncoded({ events, rejects })).inserted;
    return (await sink.commit({ events: events.flatMap((block) => decodeEvents(block, fromInsertLine)), rejects })).inserted;
  }

  /**
   * Keeps a row the sink refused in the quarantine (code `event_not_storable`), where it is
   * listed, counted, erased and purged as the quarantine is, and reports it. When the quarantine
   * does not take it either, the batch fails and is retried: no row is ever dropped here.
   */
  private async setAside(row: WriterRows, error: unknown): Promise<void> {
    const quarantined = setAsideRow(row, error);
    const what = row.rejects.length ? 'reject' : 'event';
    await this.options.sink.commit({ events: [], rejects: [quarantined] });
    this.setAsideRows++;
    this.report(new SvcError('event_not_storable', `The event database refused the ${what} ${quarantined.id} of tenant ${quarantined.tenantSeq}; it is kept in the quarantine.`, { cause: error }));
  }

  private release(messages: JsMsg[]): void {
    for (const message of messages) this.held.delete(message);
  }

  private announce(inserted: Set<string>): void {
    const stored: StoredEventKey[] = [];
    for (const key of inserted) {
      const colon = key.indexOf(':');
      const tenantSeq = Number(key.slice(0, colon));
      if (this.options.onStored) stored.push({ tenantSeq, eventId: key.slice(colon + 1) });
    }
    try {
      this.options.onStored?.(stored);
    } catch (error) {
      this.report(error);
    }
  }

  private reportBatch(rows: WriterRows, insertMs: number): void {
    const count = rows.events.reduce((n, block) => n + block.ids.length, 0) + rows.rejects.length;
    // A batch whose rows were all left out (users being erased) inserted nothing.
    if (!count) return;
    try {
      this.options.onBatch?.({ rows: count, insertMs });
    } catch (error) {
      this.report(error);
    }
  }

  private report(error: unknown): void {
    if (this.options.onError) this.options.onError(error);
    else console.error('event log writer:', error);
  }

  /**
   * Waits `ms` (the retry delay), or less when the writer stops. The fetch of the next batch and the
   * write of this one may both pause at once: each waits for `stopped`, which wakes them all.
   */
  private async pause(ms = this.options.retryDelayMs ?? WRITER_RETRY_DELAY_MS): Promise<void> {
    if (this.stopping || ms <= 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), this.stopped]);
    clearTimeout(timer);
  }
}

/** A fetched batch, and whether the stream had no more to give when it ended. */
interface Fetched {
  messages: JsMsg[];
  dry: boolean;
}

/** A batch ready to insert: its messages, deliveries and rows (see writer-batch.ts). */
interface PreparedBatch {
  messages: JsMsg[];
  deliveries: NewDelivery[];
  rows: WriterRows;
  /** What the batch prepared while this one is inserted leaves out. */
  inserting: InsertingRows;
  /** Rows left out for the batch before (a sink that looks ids up apart), else null. */
  held: HeldRows | null;
}
