import { COMMERCE_EVENTS, CSV_COLUMNS, CSV_FORMULA_TRIGGERS, type ExportTextFormat, type ExportTextOptions } from '@svc/protocol';

/**
 * SQL expressions that turn a row of `events` into its export text, so that DuckDB writes the
 * export (several times faster than building a JS object per row and serializing it in Node).
 * `data` and `items` are stored as the JSON text ingest wrote with JSON.stringify, so they go
 * out as they are. The outputs are checked against plain-code encoders in the tests.
 */

/** JSON string of a VARCHAR; `null` for NULL. */
const jsonString = (column: string) => `coalesce(to_json(${column})::VARCHAR, 'null')`;

/** ISO 8601 with milliseconds and `Z`, as Date.prototype.toISOString writes it. */
const isoTime = (column: string) => `strftime(${column}, '%Y-%m-%dT%H:%M:%S.%gZ')`;

/**
 * A DOUBLE as JavaScript's String(number) writes it: to_json gives the shortest round-trip
 * digits but keeps `.0` on whole numbers (totals are at most 1e12, far inside BIGINT).
 */
const numberText = (column: string) => `CASE WHEN ${column} = trunc(${column}) THEN ${column}::BIGINT::VARCHAR ELSE to_json(${column})::VARCHAR END`;

/** One RFC 4180 field: quoted when it holds a comma, a quote or a line break, quotes doubled. */
const csvField = (text: string) =>
  `CASE WHEN ${text} IS NULL THEN '' WHEN contains(${text}, '"') OR contains(${text}, ',') OR contains(${text}, chr(10)) OR contains(${text}, chr(13))
     THEN '"' || replace(${text}, '"', '""') || '"' ELSE ${text} END`;

/** A regular-expression class of the CSV_FORMULA_TRIGGERS characters (RE2 escapes). */
const RE2_ESCAPES: Record<string, string> = { '-': '\\-', '\t': '\\t', '\r': '\\r' };
const FORMULA_START = `^([${CSV_FORMULA_TRIGGERS.map((c) => RE2_ESCAPES[c] ?? c).join('')}])`;

/**
 * The text with a `'` in front when it starts like a spreadsheet formula. One regexp_replace
 * names the text once: the cell expression is repeated by csvField, and a CASE here would
 * multiply the expression's size (and its planning time) again.
 */
const neutralised = (text: string) => `regexp_replace(${text}, '${FORMULA_START}', '''\\1')`;

const IS_COMMERCE = `event IN (${COMMERCE_EVENTS.map((name) => `'${name}'`).join(', ')})`;

/** One string from parts in a single call: a chain of `||` would allocate every intermediate. */
const concat = (parts: string[]) => `concat(${parts.join(', ')})`;

/** The export record (toExportRecord) as one JSON line. */
const NDJSON_LINE = concat([
  `'{"eventId":"'`, 'event_id::VARCHAR', `'","event":'`, jsonString('event'),
  `',"userId":'`, jsonString('user_id'), `',"sessionId":'`, jsonString('session_id'),
  `',"broadcastId":'`, jsonString('broadcast_id'), `',"campaignId":'`, 'campaign_id::VARCHAR',
  `',"timestamp":"'`, isoTime('ts'), `'","receivedAt":"'`, isoTime('received_at'),
  `'","country":'`, jsonString('country'), `',"data":'`, 'data',
  `CASE WHEN ${IS_COMMERCE} THEN ${concat([
    `',"orderId":'`, jsonString('order_id'), `',"sponsorId":'`, jsonString('sponsor_id'),
    `',"items":'`, `coalesce(items, '[]')`, `',"total":'`, `coalesce(${numberText('total')}, '0')`,
  ])} ELSE '' END`,
  `'}'`, 'chr(10)',
]);

/** Each CSV column's text (NULL for an empty field). */
const CSV_TEXT: Record<(typeof CSV_COLUMNS)[number], string> = {
  eventId: 'event_id::VARCHAR',
  event: 'event',
  userId: 'user_id',
  sessionId: 'session_id',
  broadcastId: 'broadcast_id',
  campaignId: 'campaign_id::VARCHAR',
  timestamp: isoTime('ts'),
  receivedAt: isoTime('received_at'),
  country: 'country',
  orderId: 'order_id',
  sponsorId: 'sponsor_id',
  total: numberText('total'),
  items: 'items',
  data: 'data',
};

/** One CRLF-terminated CSV record in the documented column order, each cell through `cell`. */
const csvLine = (cell: (text: string) => string) =>
  concat([...CSV_COLUMNS.flatMap((column, i) => (i ? [`','`, csvField(cell(CSV_TEXT[column]))] : [csvField(cell(CSV_TEXT[column]))])), 'chr(13)', 'chr(10)']);
const CSV_LINE = csvLine((text) => text);
const CSV_SPREADSHEET_LINE = csvLine(neutralised);

export function exportLineSql(format: ExportTextFormat, options: ExportTextOptions = {}): string {
  if (format === 'ndjson') return NDJSON_LINE;
  return options.neutraliseFormulas ? CSV_SPREADSHEET_LINE : CSV_LINE;
}
