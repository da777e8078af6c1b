import type { DuckDBConnection } from '@duckdb/node-api';
import type { EventRow } from '../records';

/** The connection-local table a commit stages its events in before moving them into `events`. */
export const STAGE_TABLE = 'event_stage';

/** The stage's columns: an event as ingest holds it (text ids, epoch milliseconds). */
const STAGE_COLUMNS = [
  ['tenant_seq', 'INTEGER'],
  ['event_id', 'VARCHAR'],
  ['event', 'VARCHAR'],
  ['user_id', 'VARCHAR'],
  ['session_id', 'VARCHAR'],
  ['broadcast_id', 'VARCHAR'],
  ['campaign_id', 'BIGINT'],
  ['ts_ms', 'BIGINT'],
  ['received_at_ms', 'BIGINT'],
  ['country', 'VARCHAR'],
  ['order_id', 'VARCHAR'],
  ['sponsor_id', 'VARCHAR'],
  ['total', 'DOUBLE'],
  ['items', 'VARCHAR'],
  ['data', 'VARCHAR'],
] as const;

export const CREATE_STAGE_SQL = `CREATE TEMP TABLE IF NOT EXISTS ${STAGE_TABLE} (${STAGE_COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ')})`;

/** The JSON text's shape for from_json: one list per column. */
const STAGE_JSON_STRUCTURE = JSON.stringify(Object.fromEntries(STAGE_COLUMNS.map(([name, type]) => [name, [type]])));

/** Stage-shaped rows from the lists of one JSON text bound as $1, unnested side by side. */
const ROWS_FROM_JSON = `(SELECT ${STAGE_COLUMNS.map(([name]) => `unnest(j.${name}) AS ${name}`).join(', ')}
  FROM (SELECT from_json($1::VARCHAR, '${STAGE_JSON_STRUCTURE}') AS j))`;

/** Appends the rows of one JSON text (bound as $1) to the stage. */
const INSERT_STAGE_FROM_JSON_SQL = `INSERT INTO ${STAGE_TABLE} SELECT * FROM ${ROWS_FROM_JSON}`;

/** Stage-shaped rows (from `source`) as `events` rows of commit batch `batch`. */
function asEvents(source: string, batch: number): string {
  return `BY NAME SELECT tenant_seq, event_id::UUID AS event_id, event, user_id, session_id, broadcast_id, campaign_id,
    epoch_ms(ts_ms) AS ts, epoch_ms(received_at_ms) AS received_at, country, order_id, sponsor_id, total, items, data,
    ${Math.trunc(batch)} AS batch
  FROM ${source}`;
}

/** `INSERT INTO events` + this: the staged rows as rows of commit batch `batch`. */
export const fromStage = (batch: number): string => asEvents(STAGE_TABLE, batch);

/** Inserts the events of one JSON text (bound as $1) as commit batch `batch`: one statement, atomic on its own. */
export const insertEventsFromJsonSql = (batch: number): string => `INSERT INTO events ${asEvents(ROWS_FROM_JSON, batch)}`;

/**
 * Characters of JSON text one call carries, by estimate. A group commit may hold 20,000 events
 * of up to 32 KB, more than a JavaScript string can; a typical commit (3,200 events of a few
 * hundred bytes) is one text.
 */
const MAX_EVENT_JSON_CHARS = 16 * 2 ** 20;
/** What an event adds to the JSON besides `data` and `items`, roughly (ids, names, numbers). */
const EVENT_JSON_OVERHEAD_CHARS = 400;

/** A UTF-16 surrogate without its pair; DuckDB's JSON reader refuses the text holding one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Events [start, end) of a commit that go to DuckDB as one JSON text. */
export type EventSlice = readonly [start: number, end: number];

/**
 * Splits a commit's events into slices whose JSON text stays far below the longest string
 * JavaScript can hold, by an estimate (`data`, `items` and an allowance per event; escaping can
 * make a text up to about twice `maxChars`). An event larger than `maxChars` is a slice alone.
 */
export function eventSlices(events: EventRow[], maxChars = MAX_EVENT_JSON_CHARS): EventSlice[] {
  const slices: EventSlice[] = [];
  let start = 0;
  while (start < events.length) {
    let end = start;
    let chars = 0;
    while (end < events.length && (end === start || chars < maxChars)) {
      const event = events[end++]!;
      chars += event.data.length + (event.items?.length ?? 0) + EVENT_JSON_OVERHEAD_CHARS;
    }
    slices.push([start, end]);
    start = end;
  }
  return slices;
}

/** Appends the events to the stage, one slice's JSON text at a time (only one text is alive at once). */
export async function stageEvents(connection: DuckDBConnection, events: EventRow[], slices: EventSlice[]): Promise<void> {
  for (const [start, end] of slices) await connection.run(INSERT_STAGE_FROM_JSON_SQL, [stageJson(events, start, end)]);
}

/**
 * The columnar JSON text of events[start, end) for DuckDB's `from_json`. One text instead of
 * appending value by value spares the event loop ≈ 3.4 µs per event (the appender's fifteen
 * native calls per row), and DuckDB parses it off the event loop. The stored values are the
 * appender's: a lone surrogate becomes U+FFFD.
 */
export function stageJson(events: EventRow[], start = 0, end = events.length): string {
  const text = JSON.stringify(columns(events, start, end, keep));
  // JSON.stringify writes a lone surrogate as a `\ud…` escape (and nothing else produces one
  // unless the text itself holds a backslash before "ud"); only then are the strings mended.
  return text.includes('\\ud') ? JSON.stringify(columns(events, start, end, wellFormed)) : text;
}

const keep = <T extends string | null>(value: T): T => value;

function wellFormed<T extends string | null>(value: T): T {
  return (value === null ? null : value.replace(LONE_SURROGATE, '\ufffd')) as T;
}

function columns(events: EventRow[], start: number, end: number, text: <T extends string | null>(value: T) => T): Record<string, unknown[]> {
  const n = end - start;
  const tenantSeq = new Array<number>(n);
  const eventId = new Array<string>(n);
  const event = new Array<string>(n);
  const userId = new Array<string | null>(n);
  const sessionId = new Array<string>(n);
  const broadcastId = new Array<string>(n);
  const campaignId = new Array<number>(n);
  const tsMs = new Array<number>(n);
  const receivedAtMs = new Array<number>(n);
  const country = new Array<string | null>(n);
  const orderId = new Array<string | null>(n);
  const sponsorId = new Array<string | null>(n);
  const total = new Array<number | null>(n);
  const items = new Array<string | null>(n);
  const data = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const e = events[start + i]!;
    tenantSeq[i] = e.tenantSeq;
    eventId[i] = text(e.eventId);
    event[i] = text(e.event);
    userId[i] = text(e.userId);
    sessionId[i] = text(e.sessionId);
    broadcastId[i] = text(e.broadcastId);
    campaignId[i] = e.campaignId;
    tsMs[i] = e.timestampMs;
    receivedAtMs[i] = e.receivedAtMs;
    country[i] = text(e.country);
    orderId[i] = text(e.orderId);
    sponsorId[i] = text(e.sponsorId);
    total[i] = e.total;
    // `items` and `data` are JSON.stringify output: a lone surrogate there is already an escape.
    items[i] = e.items;
    data[i] = e.data;
  }
  // Keys in STAGE_COLUMNS order (from_json matches them by name).
  return {
    tenant_seq: tenantSeq,
    event_id: eventId,
    event,
    user_id: userId,
    session_id: sessionId,
    broadcast_id: broadcastId,
    campaign_id: campaignId,
    ts_ms: tsMs,
    received_at_ms: receivedAtMs,
    country,
    order_id: orderId,
    sponsor_id: sponsorId,
    total,
    items,
    data,
  };
}
