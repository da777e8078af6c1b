import { CSV_COLUMNS, CSV_FORMULA_TRIGGERS, isCommerceEvent, type ExportTextFormat, type ExportTextOptions } from '@svc/protocol';
import { chNumber } from './ch-database';
import type { StoredEventRow } from './event-sql';

/**
 * Export text of stored event rows, made in Node from the rows ClickHouse streams: the same
 * bytes as `toExportRecord` + JSON.stringify (NDJSON) or the DESIGN 5.3 CSV give, and as the
 * embedded backend's SQL writes. `data` and `items` are stored as the JSON text ingest wrote
 * with JSON.stringify, so they go out as they are (parsing and writing them again would cost
 * most of the time and give the same text).
 */

const json = (value: string | null) => (value === null ? 'null' : JSON.stringify(value));
const iso = (ms: string | number) => new Date(chNumber(ms)).toISOString();

/** The export record of one row as one JSON line. */
export function ndjsonLine(row: StoredEventRow): string {
  let line = `{"eventId":"${row.event_id}","event":${json(row.event)},"userId":${json(row.user_id)},"sessionId":${json(row.session_id)}`
    + `,"broadcastId":${json(row.broadcast_id)},"campaignId":${chNumber(row.campaign_id)},"timestamp":"${iso(row.timestamp_ms)}"`
    + `,"receivedAt":"${iso(row.received_at_ms)}","country":${json(row.country)},"data":${row.data}`;
  if (isCommerceEvent(row.event)) {
    line += `,"orderId":${json(row.order_id)},"sponsorId":${json(row.sponsor_id)},"items":${row.items ?? '[]'},"total":${JSON.stringify(row.total ?? 0)}`;
  }
  return `${line}}\n`;
}

const NEEDS_QUOTES = /[",\r\n]/;

/** One RFC 4180 field: quoted when it holds a comma, a quote or a line break, quotes doubled. */
function csvField(text: string | null): string {
  if (text === null) return '';
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A cell for spreadsheets: a single quote in front of anything that starts like a formula. */
function neutralised(text: string | null): string | null {
  return text !== null && text.length > 0 && (CSV_FORMULA_TRIGGERS as readonly string[]).includes(text[0]!) ? `'${text}` : text;
}

/** Each CSV column's text of a row (null for an empty field). */
const CSV_TEXT: Record<(typeof CSV_COLUMNS)[number], (row: StoredEventRow) => string | null> = {
  eventId: (row) => row.event_id,
  event: (row) => row.event,
  userId: (row) => row.user_id,
  sessionId: (row) => row.session_id,
  broadcastId: (row) => row.broadcast_id,
  campaignId: (row) => String(chNumber(row.campaign_id)),
  timestamp: (row) => iso(row.timestamp_ms),
  receivedAt: (row) => iso(row.received_at_ms),
  country: (row) => row.country,
  orderId: (row) => row.order_id,
  sponsorId: (row) => row.sponsor_id,
  total: (row) => (row.total === null ? null : String(row.total)),
  items: (row) => row.items,
  data: (row) => row.data,
};
const CSV_CELLS = CSV_COLUMNS.map((column) => CSV_TEXT[column]);

/** One CRLF-terminated CSV record in the documented column order. */
export function csvLine(row: StoredEventRow, options: ExportTextOptions = {}): string {
  const cell = options.neutraliseFormulas ? neutralised : (text: string | null) => text;
  return `${CSV_CELLS.map((text) => csvField(cell(text(row)))).join(',')}\r\n`;
}

/** The line maker of an export format. */
export function exportLine(format: ExportTextFormat, options: ExportTextOptions = {}): (row: StoredEventRow) => string {
  return format === 'ndjson' ? ndjsonLine : (row) => csvLine(row, options);
}
