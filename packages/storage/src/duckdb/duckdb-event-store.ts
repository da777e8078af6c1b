import { listValue, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import type { EventName, ExportTextFormat, ExportTextOptions, StoredEvent } from '@svc/protocol';
import {
  eventKey,
  type CommitBatch,
  type CommitOutcome,
  type EventFilter,
  type EventPageRequest,
  type EventStore,
  type NewDelivery,
  type QuarantinedEvent,
} from '../event-store';
import type { EventRow, QuarantineRow } from '../records';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { purgeRollupsBefore } from './analytics-rollups';
import { exportLineSql } from './export-text-sql';
import { EVENT_SELECT, eventWhere } from './event-filter-sql';
import { nullableString } from './row-values';
import { RecentKeys, unseenEvents } from '../recent-keys';
import { UNDECODABLE_EVENTS_TABLE } from './undecodable-events';
import { CREATE_STAGE_SQL, STAGE_TABLE, eventSlices, fromStage, insertEventsFromJsonSql, stageEvents, stageJson, type EventSlice } from './event-stage';

/** The first time window of a streamed export; later ones grow or shrink towards WINDOW_ROWS rows. */
const FIRST_WINDOW_MS = 3_600_000;
/** Rows an export window aims at: enough to amortize a query, few enough to sort in little memory. */
const WINDOW_ROWS = 100_000;
/**
 * Below this database memory limit an export sorts one window at a time: two windows of lines
 * in flight did not fit in 128 MB (DuckDB ran out of memory).
 */
const PREFETCH_MIN_MEMORY_BYTES = 512 * 2 ** 20;

/** A window of a streamed export whose query has started. */
interface PrefetchedWindow {
  chunks: AsyncIterator<string[]>;
  first: Promise<IteratorResult<string[]>>;
  /** Where the window ends (exclusive), epoch ms. */
  toMs: number;
}

/** Event keys remembered as stored, per generation (two generations are kept). */
const RECENT_KEYS_PER_GENERATION = 500_000;

const DELIVERY_STAGE_TABLE = 'delivery_stage';
const FROM_DELIVERY_STAGE = `SELECT d.id::UUID, d.tenant_seq, d.endpoint_id, d.event_id::UUID, d.event, d.user_id, d.payload, 'pending', 0,
    epoch_ms(d.created_at_ms), NULL, NULL, NULL, NULL, epoch_ms(d.created_at_ms), NULL
  FROM ${DELIVERY_STAGE_TABLE} d`;

interface StagedWork {
  hasRows: boolean;
  /** The commit's batch number (see RollupQueue). */
  batch: number;
  hasDeliveries: boolean;
  rejects: QuarantineRow[];
}

/**
 * Events in DuckDB. A commit hands DuckDB its rows as one columnar JSON text (see event-stage).
 * A commit of events alone is one autocommitted INSERT from that text: each call of a commit
 * waits for the event loop under load, so one call is the fastest. Otherwise the text fills a
 * connection-local stage, whose rows move into `events`, numbered by commit batch, in one
 * transaction with the batch's deliveries and rejects; until that transaction empties it,
 * `event_stage` holds the commit's rows (in the ON CONFLICT fallback also ids stored earlier).
 * Measured no faster: two commits side by side on two connections (they contend inside
 * DuckDB), and appending straight into `events` inside the transaction (the appender then
 * converts to UUID and TIMESTAMP row by row, which costs what the INSERT … SELECT saves).
 */
export class DuckDbEventStore implements EventStore {
  private readonly recent = new RecentKeys(RECENT_KEYS_PER_GENERATION);
  private stageReady = false;
  private deliveryStageReady = false;

  constructor(
    private readonly db: DuckDbDatabase,
    /** Rows a window of a streamed export aims at (smaller in tests, to cover many windows). */
    private readonly exportWindowRows = WINDOW_ROWS,
  ) {
    // The stages are temp tables of the write connection: a new connection has none.
    db.onReconnect(() => {
      this.stageReady = false;
      this.deliveryStageReady = false;
    });
  }

  async commit(batch: CommitBatch): Promise<CommitOutcome> {
    // Commits must not outrun the rollups by much: readers of the dashboard wait for them.
    if (this.db.rollups.isFull()) await this.db.rollups.settled();
    // Ids stored recently are answered from memory; only the rest go to the database.
    const { events, keys, candidates } = this.candidates(batch);
    const deliveries = (batch.deliveries ?? []).filter((d) => candidates.has(eventKey(d.tenantSeq, d.eventId)));
    let commitBatch = 0;
    const inserted = await this.db.write(async (connection) => {
      commitBatch = this.db.rollups.nextBatch();
      const slices = eventSlices(events);
      try {
        // Events alone, in one text (the common case under load): one statement is the whole
        // transaction, sent in one call; every other call of a commit waits for the event loop.
        let conflict = false;
        if (slices.length === 1 && !deliveries.length && !batch.rejects.length) {
          if (await this.insertDirect(connection, stageJson(events), commitBatch)) return candidates;
          conflict = true;
        }
        if (slices.length) await this.stage(connection, events, slices);
        if (deliveries.length) await this.stageDeliveries(connection, deliveries);
        // A plain INSERT stays fast however large the table grows; when it meets an id stored
        // long ago, the batch is redone with ON CONFLICT, which reports what it skipped.
        const work = { hasRows: events.length > 0, batch: commitBatch, hasDeliveries: deliveries.length > 0, rejects: batch.rejects };
        if (!conflict && (await this.insertPlain(connection, work))) return candidates;
        return await this.insertSkippingConflicts(connection, work);
      } catch (error) {
        // Nothing staged may ride along with the next commit.
        const clear = this.clearStages();
        if (clear.length) await connection.run(clear.join(';\n'));
        throw error;
      }
    });
    for (let i = 0; i < events.length; i++) if (inserted === candidates || inserted.has(keys[i]!)) this.recent.add(events[i]!.tenantSeq, events[i]!.eventId);
    this.queued(commitBatch, events, inserted);
    return { inserted };
  }

  /** The events to write: each id once (its first occurrence), none stored recently; with their keys. */
  private candidates(batch: CommitBatch): { events: EventRow[]; keys: string[]; candidates: Set<string> } {
    const { events, keys, unseen } = unseenEvents(batch, this.recent);
    return { events, keys, candidates: unseen };
  }

  /** Has the rollups of the batch's stored events derived. */
  private queued(batch: number, events: EventRow[], inserted: ReadonlySet<string>): void {
    const stored = events.length === inserted.size ? events : events.filter((e) => inserted.has(eventKey(e.tenantSeq, e.eventId)));
    if (stored.length) this.db.rollups.committedBatch(batch, stored.length, new Set(stored.map((e) => e.event)));
  }

  /** Inserts the events of one JSON text in one autocommitted statement; false, with nothing stored, when an id is already stored. */
  private async insertDirect(connection: DuckDBConnection, text: string, batch: number): Promise<boolean> {
    try {
      await connection.run(insertEventsFromJsonSql(batch), [text]);
      return true;
    } catch (error) {
      if (isConstraintViolation(error)) return false;
      throw error;
    }
  }

  /**
   * Moves the staged rows into `events`, their deliveries into `webhook_deliveries`, stores the
   * rejects and empties the stage, in one transaction sent as one batch of statements: under
   * load each separate call waits for the event loop, which is busy with requests (a lone
   * BEGIN waited 20 ms). False, with everything rolled back, when an id is already stored.
   */
  private async insertPlain(connection: DuckDBConnection, work: StagedWork): Promise<boolean> {
    const statements = ['BEGIN TRANSACTION'];
    // The rows carry their batch number: the rollups are derived from them after the commit (see RollupQueue).
    if (work.hasRows) statements.push(`INSERT INTO events ${fromStage(work.batch)}`);
    if (work.hasDeliveries) statements.push(`INSERT INTO webhook_deliveries ${FROM_DELIVERY_STAGE}`);
    statements.push(...this.clearStages());
    // Rejects need bound parameters, so with rejects the COMMIT is a call of its own.
    if (!work.rejects.length) statements.push('COMMIT');
    try {
      await connection.run(statements.join(';\n'));
      if (work.rejects.length) {
        await insertRejects(connection, work.rejects);
        await connection.run('COMMIT');
      }
      return true;
    } catch (error) {
      await connection.run('ROLLBACK').catch(() => undefined);
      if (isConstraintViolation(error)) return false;
      throw error;
    }
  }

  /** Like insertPlain, but skips ids already stored; only the events it stored get deliveries. */
  private async insertSkippingConflicts(connection: DuckDBConnection, work: StagedWork): Promise<Set<string>> {
    const inserted = new Set<string>();
    await connection.run('BEGIN TRANSACTION');
    try {
      if (work.hasRows) {
        const result = await connection.runAndReadAll(`INSERT INTO events ${fromStage(work.batch)} ON CONFLICT DO NOTHING RETURNING tenant_seq, event_id`);
        for (const row of result.getRowObjectsJS()) inserted.add(eventKey(Number(row.tenant_seq), String(row.event_id)));
      }
      if (work.hasDeliveries) {
        await connection.run(
          `INSERT INTO webhook_deliveries ${FROM_DELIVERY_STAGE} WHERE list_contains($1::VARCHAR[], d.tenant_seq::VARCHAR || ':' || d.event_id)`,
          [listValue([...inserted])],
        );
      }
      if (work.rejects.length) await insertRejects(connection, work.rejects);
      await connection.run([...this.clearStages(), 'COMMIT'].join(';\n'));
      return inserted;
    } catch (error) {
      await connection.run('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /** Statements that empty the staging tables created so far on the write connection. */
  private clearStages(): string[] {
    const statements: string[] = [];
    if (this.stageReady) statements.push(`DELETE FROM ${STAGE_TABLE}`);
    if (this.deliveryStageReady) statements.push(`DELETE FROM ${DELIVERY_STAGE_TABLE}`);
    return statements;
  }

  private async stageDeliveries(connection: DuckDBConnection, deliveries: NewDelivery[]): Promise<void> {
    if (!this.deliveryStageReady) {
      await connection.run(
        `CREATE TEMP TABLE IF NOT EXISTS ${DELIVERY_STAGE_TABLE} (
           id VARCHAR, tenant_seq INTEGER, endpoint_id VARCHAR, event_id VARCHAR, event VARCHAR, user_id VARCHAR,
           payload VARCHAR, created_at_ms BIGINT)`,
      );
      this.deliveryStageReady = true;
    }
    const appender = await connection.createAppender(DELIVERY_STAGE_TABLE, null, 'temp');
    try {
      for (const d of deliveries) {
        appender.appendVarchar(d.id);
        appender.appendInteger(d.tenantSeq);
        appender.appendVarchar(d.endpointId);
        appender.appendVarchar(d.eventId.toLowerCase());
        appender.appendVarchar(d.event);
        appendNullableVarchar(appender, d.userId);
        appender.appendVarchar(d.payload);
        appender.appendBigInt(BigInt(d.createdAt));
        appender.endRow();
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }

  private async stage(connection: DuckDBConnection, events: EventRow[], slices: EventSlice[]): Promise<void> {
    if (!this.stageReady) {
      await connection.run(CREATE_STAGE_SQL);
      this.stageReady = true;
    }
    await stageEvents(connection, events, slices);
  }

  async queryEvents(filter: EventFilter, page: EventPageRequest): Promise<StoredEvent[]> {
    const values: DuckDBValue[] = [];
    const order = page.order ?? 'asc';
    const where = eventWhere(filter, values, page.after, order);
    values.push(page.limit);
    const direction = order === 'desc' ? 'DESC' : 'ASC';
    const rows = await this.db.query(
      `SELECT ${EVENT_SELECT} FROM events WHERE ${where} ORDER BY ts ${direction}, event_id ${direction} LIMIT $${values.length}`,
      values,
    );
    return rows.map(toStoredEvent);
  }

  async *streamEventText(filter: EventFilter, format: ExportTextFormat, options: ExportTextOptions = {}): AsyncIterable<string> {
    const values: DuckDBValue[] = [];
    const where = eventWhere(filter, values);
    const [bounds] = await this.db.query(`SELECT epoch_ms(min(ts)) AS first_ms, epoch_ms(max(ts)) AS last_ms FROM events WHERE ${where}`, values);
    if (bounds?.first_ms === null || bounds?.first_ms === undefined) return;
    const lastMs = Number(bounds.last_ms);
    // Time windows, each sorted on its own: a sort of the whole result would hold all of it.
    // The next window is queried while this one is sent, so that the database builds and sorts
    // its lines while JavaScript turns the current ones into text (one window ahead at most,
    // and none when the database has little memory).
    const ahead = (await this.db.memoryLimitBytes()) >= PREFETCH_MIN_MEMORY_BYTES;
    const line = exportLineSql(format, options);
    const open = (fromMs: number, toMs: number): PrefetchedWindow => {
      const sql = `SELECT ${line} FROM events WHERE ${where} AND ts >= epoch_ms($${values.length + 1}::BIGINT) AND ts < epoch_ms($${values.length + 2}::BIGINT)
        ORDER BY ts, event_id`;
      const chunks = this.db.streamColumn(sql, [...values, fromMs, toMs])[Symbol.asyncIterator]();
      const first = chunks.next();
      first.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile
      return { chunks, first, toMs };
    };
    let spanMs = FIRST_WINDOW_MS;
    let current: PrefetchedWindow | null = open(Number(bounds.first_ms), Math.min(Number(bounds.first_ms) + spanMs, lastMs + 1));
    let next: PrefetchedWindow | null = null;
    try {
      while (current) {
        next = ahead && current.toMs <= lastMs ? open(current.toMs, Math.min(current.toMs + spanMs, lastMs + 1)) : null;
        let rows = 0;
        for (let chunk = await current.first; !chunk.done; chunk = await current.chunks.next()) {
          rows += chunk.value.length;
          yield chunk.value.join('');
        }
        // The window after `next` is sized by this one's rows.
        if (rows < this.exportWindowRows / 2) spanMs *= 2;
        else if (rows > this.exportWindowRows * 2) spanMs = Math.max(1, Math.floor(spanMs / 2));
        if (!next && current.toMs <= lastMs) next = open(current.toMs, Math.min(current.toMs + spanMs, lastMs + 1));
        current = next;
        next = null;
      }
    } finally {
      // A consumer that stops early (a client gone) releases the windows' connections.
      for (const window of [current, next]) {
        if (window) await window.first.then(() => window.chunks.return?.(), () => undefined);
      }
    }
  }

  async countEvents(filter: EventFilter): Promise<number> {
    const values: DuckDBValue[] = [];
    const rows = await this.db.query(`SELECT count(*) AS n FROM events WHERE ${eventWhere(filter, values)}`, values);
    return Number(rows[0]?.n ?? 0);
  }

  purgeEventsBefore(tenantSeq: number, cutoffMs: number): Promise<number> {
    return this.db.rollups.transaction(async (connection) => {
      const result = await connection.run('DELETE FROM events WHERE tenant_seq = $1 AND ts < epoch_ms($2::BIGINT)', [tenantSeq, cutoffMs]);
      await purgeRollupsBefore(connection, tenantSeq, cutoffMs);
      return Number(result.rowsChanged);
    });
  }

  async purgeRejectedBefore(cutoffMs: number): Promise<number> {
    // Events set aside as undecodable are kept for inspection like the quarantine, and as long.
    const setAside = await this.deleteCounting(`DELETE FROM ${UNDECODABLE_EVENTS_TABLE} WHERE set_aside_at < epoch_ms($1::BIGINT)`, [cutoffMs]);
    return setAside + (await this.deleteCounting('DELETE FROM rejected_events WHERE received_at < epoch_ms($1::BIGINT)', [cutoffMs]));
  }

  private deleteCounting(sql: string, values: DuckDBValue[]): Promise<number> {
    return this.db.write(async (connection) => {
      const result = await connection.run(sql, values);
      return Number(result.rowsChanged);
    });
  }

  async listRejected(
    tenantSeq: number,
    options: { limit: number; after?: { receivedAtMs: number; id: string } },
  ): Promise<QuarantinedEvent[]> {
    const values: DuckDBValue[] = [tenantSeq, options.limit];
    let after = '';
    if (options.after) {
      after = 'AND (received_at < epoch_ms($3::BIGINT) OR (received_at = epoch_ms($3::BIGINT) AND id < $4::UUID))';
      values.push(options.after.receivedAtMs, options.after.id);
    }
    const rows = await this.db.query(
      `SELECT id::VARCHAR AS id, epoch_ms(received_at) AS received_at_ms, code, detail, errors, event_name, payload
       FROM rejected_events
       WHERE tenant_seq = $1 ${after}
       ORDER BY received_at DESC, id DESC LIMIT $2`,
      values,
    );
    return rows.map((row) => ({
      id: String(row.id),
      receivedAt: new Date(Number(row.received_at_ms)).toISOString(),
      code: String(row.code),
      detail: String(row.detail),
      errors: JSON.parse(String(row.errors)) as unknown[],
      event: row.event_name === null ? null : String(row.event_name),
      payload: JSON.parse(String(row.payload)) as unknown,
    }));
  }
}

function isConstraintViolation(error: unknown): boolean {
  return error instanceof Error && /constraint|duplicate key/i.test(error.message);
}

type Appender = Awaited<ReturnType<DuckDBConnection['createAppender']>>;

function appendNullableVarchar(appender: Appender, value: string | null): void {
  if (value === null) appender.appendNull();
  else appender.appendVarchar(value);
}

async function insertRejects(connection: DuckDBConnection, rejects: QuarantineRow[]): Promise<void> {
  const prepared = await connection.prepare(
    `INSERT INTO rejected_events VALUES ($1, $2::UUID, epoch_ms($3::BIGINT), $4, $5, $6, $7, $8, $9)`,
  );
  for (const r of rejects) {
    prepared.bind([r.tenantSeq, r.id, r.receivedAtMs, r.code, r.detail, r.errors, r.eventName, r.userId, r.payload]);
    await prepared.run();
  }
}

function toStoredEvent(row: Row): StoredEvent {
  return {
    eventId: String(row.event_id),
    event: String(row.event) as EventName,
    userId: nullableString(row.user_id),
    sessionId: String(row.session_id),
    broadcastId: String(row.broadcast_id),
    campaignId: Number(row.campaign_id),
    timestamp: new Date(Number(row.ts_ms)).toISOString(),
    receivedAt: new Date(Number(row.received_at_ms)).toISOString(),
    country: nullableString(row.country),
    data: JSON.parse(String(row.data)) as Record<string, unknown>,
    orderId: nullableString(row.order_id),
    sponsorId: nullableString(row.sponsor_id),
    items: row.items === null ? null : (JSON.parse(String(row.items)) as StoredEvent['items']),
    total: row.total === null ? null : Number(row.total),
  };
}
