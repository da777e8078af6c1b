import { createHash } from 'node:crypto';
import { SvcError } from '@svc/protocol';
import { lineStarts, selectEvents, type EncodedEvents } from '../encoded-events';
import type { QuarantineRow } from '../records';
import { eventKey } from '../event-store';
import { isChRowRefusal, isChTooManyPartitions } from '../clickhouse/ch-failure';

/** Rows the writer stores in one sink commit. */
export interface WriterRows {
  events: EncodedEvents[];
  rejects: QuarantineRow[];
}

/** What `storeOrSetAside` did with the rows. */
export interface StoredOrSetAside {
  /** Keys of the events stored. */
  inserted: Set<string>;
  /** How many rows (events or rejects) the sink refused and were set aside. */
  setAside: number;
  /** `eventKey` of each event set aside (its webhook deliveries are not sent). */
  setAsideKeys: Set<string>;
}

/**
 * A failure that passes by itself (the sink or the network down, a busy server: `storage_unavailable`):
 * the batch is retried as it is.
 */
export function isTransient(error: unknown): boolean {
  return error instanceof SvcError && (error.code === 'storage_unavailable' || error.code === 'not_ready');
}

/** DuckDB's words for a value it cannot take (a sink of rows other than ClickHouse's). */
const DUCKDB_ROW_REFUSAL = /^(Conversion Error|Invalid Input Error):/;

/**
 * A failure that smaller parts of the batch may not meet: the sink refused the data of a row
 * (ClickHouse's parse and type errors, see ch-failure.ts), or the insert spans too many month
 * partitions. Only these split the batch; any other failure (permissions, a read-only or
 * missing table, a cut connection, a proxy's error page) concerns the whole database, and the
 * batch is retried as it is.
 */
export function isRowRefusal(error: unknown): boolean {
  if (error instanceof SvcError) return false;
  if (isChRowRefusal(error) || isChTooManyPartitions(error)) return true;
  return error instanceof Error && DUCKDB_ROW_REFUSAL.test(error.message);
}

const count = (rows: WriterRows) => rows.events.reduce((n, block) => n + block.ids.length, 0) + rows.rejects.length;

/** The rows in two halves of about the same count, in order. */
function halves(rows: WriterRows): [WriterRows, WriterRows] {
  let left = Math.floor(count(rows) / 2);
  const first: WriterRows = { events: [], rejects: [] };
  const second: WriterRows = { events: [], rejects: [] };
  for (const block of rows.events) {
    if (left >= block.ids.length) first.events.push(block);
    else if (left <= 0) second.events.push(block);
    else {
      const cut = left;
      first.events.push(selectEvents(block, (i) => i < cut));
      second.events.push(selectEvents(block, (i) => i >= cut));
    }
    left -= block.ids.length;
  }
  first.rejects = rows.rejects.slice(0, Math.max(0, left));
  second.rejects = rows.rejects.slice(Math.max(0, left));
  return [first, second];
}

/**
 * Stores `rows` with `store`; when the sink refuses a row's data (`isRowRefusal`), finds the
 * rows it refuses by storing halves, stores the others and hands each refused row to
 * `setAside` (as the one row of its `WriterRows`), so that one row the sink cannot take never
 * blocks the stream. Halves also get an insert spanning too many month partitions through.
 * Any other failure, also in a half, rejects: the caller retries the whole batch later (rows a
 * half stored already are recognised then by their ids).
 */
export async function storeOrSetAside(
  rows: WriterRows,
  store: (rows: WriterRows) => Promise<Set<string>>,
  setAside: (row: WriterRows, error: unknown) => Promise<void>,
): Promise<StoredOrSetAside> {
  try {
    return { inserted: await store(rows), setAside: 0, setAsideKeys: new Set() };
  } catch (error) {
    if (!isRowRefusal(error)) throw error;
    if (count(rows) <= 1) {
      // One row spans one partition: a refusal for too many is not about it.
      if (isChTooManyPartitions(error)) throw error;
      await setAside(rows, error);
      const block = rows.events[0];
      return { inserted: new Set(), setAside: 1, setAsideKeys: new Set(block ? [eventKey(block.tenantSeq, block.ids[0]!)] : []) };
    }
    const [first, second] = halves(rows);
    const a = await storeOrSetAside(first, store, setAside);
    const b = await storeOrSetAside(second, store, setAside);
    for (const key of b.inserted) a.inserted.add(key);
    for (const key of b.setAsideKeys) a.setAsideKeys.add(key);
    return { inserted: a.inserted, setAside: a.setAside + b.setAside, setAsideKeys: a.setAsideKeys };
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The event's id when it is a UUID (the quarantine's id column is one), else a UUID made from it: the same each time. */
function quarantineId(tenantSeq: number, eventId: string): string {
  if (UUID.test(eventId)) return eventId;
  const hex = createHash('sha256').update(`${tenantSeq}\n${eventId}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Lone UTF-16 surrogates, which ClickHouse refuses in JSON text (code 25). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The text with each lone surrogate replaced by U+FFFD. */
function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\ufffd');
}

/** Longest error text kept with a set-aside row. */
const DETAIL_CHARS = 2_000;

/**
 * The quarantine row of a row the sink refused: an event keeps its id, user and receipt time,
 * its text as the payload and the code `event_not_storable`; a reject is kept as it was, its
 * detail saying why it could not be stored.
 */
export function setAsideRow(row: WriterRows, error: unknown): QuarantineRow {
  const reason = (error instanceof Error ? error.message : String(error)).slice(0, DETAIL_CHARS);
  const reject = row.rejects[0];
  if (reject) {
    // Made storable: the refused value is most likely a malformed id or a lone surrogate.
    return {
      ...reject,
      id: quarantineId(reject.tenantSeq, reject.id),
      code: 'event_not_storable',
      detail: wellFormed(`${reject.code}: ${reject.detail} (not storable: ${reason})`),
      errors: wellFormed(reject.errors),
      eventName: reject.eventName === null ? null : wellFormed(reject.eventName),
      userId: reject.userId === null ? null : wellFormed(reject.userId),
      payload: wellFormed(reject.payload),
    };
  }
  const block = row.events[0]!;
  const starts = lineStarts(block);
  const line = Buffer.from(block.lines.buffer, block.lines.byteOffset, block.lines.byteLength).toString('utf8', starts[0], starts[1]! - 1);
  let eventName: string | null = null;
  let payload = JSON.stringify(line);
  try {
    const parsed = JSON.parse(line) as { event?: unknown };
    if (typeof parsed.event === 'string') eventName = wellFormed(parsed.event);
    payload = line;
  } catch {
    // Not JSON: kept as a string.
  }
  return {
    tenantSeq: block.tenantSeq,
    id: quarantineId(block.tenantSeq, block.ids[0]!),
    receivedAtMs: block.received[0]!,
    code: 'event_not_storable',
    detail: `The event database refused the event: ${reason}`,
    errors: '[]',
    eventName,
    userId: block.users[0] == null ? null : wellFormed(block.users[0]),
    payload: wellFormed(payload),
  };
}
