import type { DuckDBConnection } from '@duckdb/node-api';
import type { EventRow } from '../records';

/** The connection-local table a commit stages its events in before moving them into `events`. */
export const STAGE_TABLE = 'event_stage';

/** A stage column: its name, type, how to read it from an event, and whether it is text that may need mending. */
interface StageColumn {
  name: string;
  type: 'INTEGER' | 'BIGINT' | 'DOUBLE' | 'VARCHAR';
  read: (event: EventRow) => string | number | null;
  /** A text field as the sender wrote it (may hold a lone surrogate); `items` and `data` are JSON.stringify output. */
  mend?: true;
}

/** The stage's columns: an event as ingest holds it (text ids, epoch milliseconds). */
const STAGE_COLUMNS: readonly StageColumn[] = [
  { name: 'tenant_seq', type: 'INTEGER', read: (e) => e.tenantSeq },
  { name: 'event_id', type: 'VARCHAR', read: (e) => e.eventId, mend: true },
  { name: 'event', type: 'VARCHAR', read: (e) => e.event, mend: true },
  { name: 'user_id', type: 'VARCHAR', read: (e) => e.userId, mend: true },
  { name: 'session_id', type: 'VARCHAR', read: (e) => e.sessionId, mend: true },
  { name: 'broadcast_id', type: 'VARCHAR', read: (e) => e.broadcastId, mend: true },
  { name: 'campaign_id', type: 'BIGINT', read: (e) => e.campaignId },
  { name: 'ts_ms', type: 'BIGINT', read: (e) => e.timestampMs },
  { name: 'received_at_ms', type: 'BIGINT', read: (e) => e.receivedAtMs },
  { name: 'country', type: 'VARCHAR', read: (e) => e.country, mend: true },
  { name: 'order_id', type: 'VARCHAR', read: (e) => e.orderId, mend: true },
  { name: 'sponsor_id', type: 'VARCHAR', read: (e) => e.sponsorId, mend: true },
  { name: 'total', type: 'DOUBLE', read: (e) => e.total },
  { name: 'items', type: 'VARCHAR', read: (e) => e.items },
  { name: 'data', type: 'VARCHAR', read: (e) => e.data },
];

export const CREATE_STAGE_SQL = `CREATE TEMP TABLE IF NOT EXISTS ${STAGE_TABLE} (${STAGE_COLUMNS.map(({ name, type }) => `${name} ${type}`).join(', ')})`;

/** The JSON text's shape for from_json: one list per column. */
const STAGE_JSON_STRUCTURE = JSON.stringify(Object.fromEntries(STAGE_COLUMNS.map(({ name, type }) => [name, [type]])));

/** Stage-shaped rows from the lists of one JSON text bound as $1, unnested side by side. */
const ROWS_FROM_JSON = `(SELECT ${STAGE_COLUMNS.map(({ name }) => `unnest(j.${name}) AS ${name}`).join(', ')}
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
  const text = JSON.stringify(columns(events, start, end, false));
  // JSON.stringify writes a lone surrogate as a `\ud…` escape (and nothing else produces one
  // unless the text itself holds a backslash before "ud"); only then are the strings mended.
  return text.includes('\\ud') ? JSON.stringify(columns(events, start, end, true)) : text;
}

function wellFormed(value: unknown): unknown {
  return typeof value === 'string' ? value.replace(LONE_SURROGATE, '\ufffd') : value;
}

/** events[start, end) as one list per stage column, keyed by column name (from_json matches by name). */
function columns(events: EventRow[], start: number, end: number, mend: boolean): Record<string, unknown[]> {
  const result: Record<string, unknown[]> = {};
  for (const column of STAGE_COLUMNS) {
    const values = new Array<unknown>(end - start);
    const { read } = column;
    for (let i = start; i < end; i++) values[i - start] = read(events[i]!);
    result[column.name] = mend && column.mend ? values.map(wellFormed) : values;
  }
  return result;
}
