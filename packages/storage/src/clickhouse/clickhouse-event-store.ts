import type { ExportTextFormat, ExportTextOptions, StoredEvent } from '@svc/protocol';
import {
  type CommitBatch,
  type CommitOutcome,
  type EventFilter,
  type EventPageRequest,
  type EventStore,
  type QuarantinedEvent,
} from '../event-store';
import type { QuarantineRow } from '../records';
import { encodeEvents, firstOccurrences, type EncodedEvents, type SplitEncodedEventSink } from '../encoded-events';
import { chNumber, type ChDatabase } from './ch-database';
import { carriesDataFields, EARLIER_LINE_COLUMNS, EVENT_ORDER, EVENT_ORDER_DESC, EVENT_SELECT, eventWhere, INSERT_LINE_COLUMNS, toStoredEvent, type StoredEventRow } from './event-sql';
import { exportLine } from './export-lines';
import { purgeEventsBefore } from './event-retention';
import { sqlInteger, sqlString } from './sql-literal';
import { newRejects, toRejectRow } from './reject-rows';
import { storedEventKeys } from './stored-event-keys';

/** The first time window of a streamed export; later ones grow or shrink towards WINDOW_ROWS rows. */
const FIRST_WINDOW_MS = 3_600_000;
/** Rows an export window aims at: each window is sorted on the server, so it bounds that sort's memory. */
const WINDOW_ROWS = 200_000;

/**
 * Events and the quarantine in ClickHouse (tables of ch-migrations). `commit` is the writer's
 * sink: one insert per table, so callers pass large batches. Event ids already stored are
 * skipped, whatever the time they were stored with (looked up by id in `event_ids`, which a
 * materialized view fills from every insert into `events`); two commits of one id at the same
 * moment may both store it, and ReplacingMergeTree merges the copies later when their times
 * are equal: every read here is correct with such copies still unmerged (FINAL for counts,
 * LIMIT 1 BY for pages, and the export skips the repeats of an event, which its order puts
 * side by side).
 *
 * Webhook deliveries are not kept here: in cluster mode the writer queues a batch's deliveries
 * after this commit (`CommitBatch.deliveries` is ignored).
 */
export class ClickHouseEventStore implements EventStore, SplitEncodedEventSink {
  constructor(
    private readonly db: ChDatabase,
    /** Rows a window of a streamed export aims at (smaller in tests, to cover many windows). */
    private readonly exportWindowRows = WINDOW_ROWS,
  ) {}

  async commit(batch: CommitBatch): Promise<CommitOutcome> {
    return this.commitEncoded({ events: encodeEvents(batch.events), rejects: batch.rejects });
  }

  /**
   * The writer's commit: events as the lines nodes encoded (see `EncodedEvents`), inserted as
   * they are. Each id once (its first occurrence), none stored already: no cache of recent ids
   * here, the lookup by id in `event_ids` finds them all (a cache cost the writer more CPU than
   * it saved, measured: docs/benchmarks.md).
   */
  async commitEncoded(batch: { events: EncodedEvents[]; rejects: QuarantineRow[] }): Promise<CommitOutcome> {
    const picked = firstOccurrences(batch.events);
    const stored = picked.keys.size ? await this.storedKeys(picked.keys) : new Set<string>();
    const inserted = new Set<string>();
    const events = picked.select((key) => {
      if (stored.has(key)) return false;
      inserted.add(key);
      return true;
    });
    await this.insertEncoded({ events, rejects: await this.unstoredRejects(batch.rejects) });
    return { inserted };
  }

  /** Which of the event keys are stored already, whatever their time (see stored-event-keys.ts). */
  storedKeys(keys: Iterable<string>): Promise<Set<string>> {
    return storedEventKeys(this.db, keys);
  }

  async unstoredRejects(rejects: QuarantineRow[]): Promise<QuarantineRow[]> {
    return rejects.length ? newRejects(this.db, rejects) : [];
  }

  /**
   * One insert per table of rows the caller has checked are not stored yet (`storedKeys`,
   * `unstoredRejects`); two into `events` when some lines were encoded by a node of a release
   * before the columns of data's fields (a backlog in the event log): those are inserted naming
   * the columns they have, so ClickHouse fills the others from `data` (their DEFAULT), where
   * naming them would store empty text on 18.16.
   */
  async insertEncoded(batch: { events: EncodedEvents[]; rejects: QuarantineRow[] }): Promise<void> {
    const current: Uint8Array[] = [];
    const earlier: Uint8Array[] = [];
    for (const block of batch.events) if (block.ids.length) (carriesDataFields(block.lines) ? current : earlier).push(block.lines);
    await this.db.insertLines('events', current, INSERT_LINE_COLUMNS);
    await this.db.insertLines('events', earlier, EARLIER_LINE_COLUMNS);
    await this.db.insert('rejected_events', batch.rejects.map(toRejectRow));
  }

  async queryEvents(filter: EventFilter, page: EventPageRequest): Promise<StoredEvent[]> {
    // LIMIT 1 BY drops unmerged copies of an event before the page is cut.
    const rows = await this.db.query<StoredEventRow>(
      `SELECT ${EVENT_SELECT} FROM events WHERE ${eventWhere(filter, page.after, page.order)}
       ORDER BY ${page.order === 'desc' ? EVENT_ORDER_DESC : EVENT_ORDER} LIMIT 1 BY timestamp_ms, event_id LIMIT ${sqlInteger(page.limit)}`,
    );
    return rows.map(toStoredEvent);
  }

  async *streamEventText(filter: EventFilter, format: ExportTextFormat, options: ExportTextOptions = {}): AsyncIterable<string> {
    const where = eventWhere(filter);
    const [bounds] = await this.db.query<{ rows: string; first_ms: string; last_ms: string }>(
      `SELECT count() AS rows, min(timestamp_ms) AS first_ms, max(timestamp_ms) AS last_ms FROM events WHERE ${where}`,
    );
    if (!bounds || chNumber(bounds.rows) === 0) return;
    const lastMs = chNumber(bounds.last_ms);
    const line = exportLine(format, options);
    // Time windows, each sorted on the server on its own: a sort of the whole result would
    // hold all of it. Copies of an event sit side by side in this order: the repeat is skipped
    // (measured faster than FINAL, which merges them while reading: docs/benchmarks.md).
    let previous = '';
    let spanMs = FIRST_WINDOW_MS;
    for (let fromMs = chNumber(bounds.first_ms); fromMs <= lastMs; ) {
      const toMs = Math.min(fromMs + spanMs, lastMs + 1);
      const sql = `SELECT ${EVENT_SELECT} FROM events
        WHERE ${where} AND timestamp_ms >= ${sqlInteger(fromMs)} AND timestamp_ms < ${sqlInteger(toMs)} ORDER BY ${EVENT_ORDER}`;
      let rows = 0;
      for await (const chunk of this.db.stream<StoredEventRow>(sql)) {
        let text = '';
        for (const row of chunk) {
          const key = `${row.timestamp_ms}:${row.event_id}`;
          if (key === previous) continue;
          previous = key;
          text += line(row);
        }
        rows += chunk.length;
        if (text) yield text;
      }
      if (rows < this.exportWindowRows / 2) spanMs *= 2;
      else if (rows > this.exportWindowRows * 2) spanMs = Math.max(1, Math.floor(spanMs / 2));
      fromMs = toMs;
    }
  }

  async countEvents(filter: EventFilter): Promise<number> {
    const [row] = await this.db.query<{ n: string }>(`SELECT count() AS n FROM events FINAL WHERE ${eventWhere(filter)}`);
    return chNumber(row?.n ?? 0);
  }

  purgeEventsBefore(tenantSeq: number, cutoffMs: number): Promise<number> {
    return purgeEventsBefore(this.db, tenantSeq, cutoffMs);
  }

  async purgeRejectedBefore(cutoffMs: number): Promise<number> {
    const where = `received_at_ms < ${sqlInteger(cutoffMs)}`;
    const [row] = await this.db.query<{ n: string }>(`SELECT count() AS n FROM rejected_events FINAL WHERE ${where}`);
    const count = chNumber(row?.n ?? 0);
    if (count === 0) return 0;
    await this.db.command(`ALTER TABLE rejected_events DELETE WHERE ${where}`);
    await this.db.waitForMutations('rejected_events');
    return count;
  }

  async listRejected(tenantSeq: number, options: { limit: number; after?: { receivedAtMs: number; id: string } }): Promise<QuarantinedEvent[]> {
    let after = '';
    if (options.after) {
      const at = sqlInteger(options.after.receivedAtMs);
      after = `AND (received_at_ms < ${at} OR (received_at_ms = ${at} AND toString(id) < ${sqlString(options.after.id.toLowerCase())}))`;
    }
    const rows = await this.db.query<QuarantineListRow>(
      `SELECT toString(id) AS id, received_at_ms, code, detail, errors, event_name, payload FROM rejected_events
       WHERE tenant_seq = ${sqlInteger(tenantSeq)} ${after}
       ORDER BY received_at_ms DESC, toString(id) DESC LIMIT 1 BY received_at_ms, id LIMIT ${sqlInteger(options.limit)}`,
    );
    return rows.map((row) => ({
      id: row.id,
      receivedAt: new Date(chNumber(row.received_at_ms)).toISOString(),
      code: row.code,
      detail: row.detail,
      errors: JSON.parse(row.errors) as unknown[],
      event: row.event_name,
      payload: JSON.parse(row.payload) as unknown,
    }));
  }
}

interface QuarantineListRow {
  id: string;
  received_at_ms: string;
  code: string;
  detail: string;
  errors: string;
  event_name: string | null;
  payload: string;
}
