import { CSV_COLUMNS, toExportRecord, type StoredEvent } from '@svc/protocol';

/**
 * Plain-code encoders of the export formats, the definition the database-made export text is
 * checked against: the NDJSON line is the export record through JSON.stringify; a CSV record
 * is the DESIGN 5.3 columns, RFC 4180 quoting only where needed, CRLF.
 */

const NEEDS_QUOTES = /[",\r\n]/;

/** One RFC 4180 field: quoted when it holds a comma, a quote or a line break, quotes doubled. */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  const text = String(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Spreadsheets run a cell starting with one of these as a formula (OWASP, CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** A cell for spreadsheets: a single quote in front of anything that starts like a formula. */
export function neutralised(value: string | number | null): string | number | null {
  return value !== null && FORMULA_START.test(String(value)) ? `'${value}` : value;
}

export function eventToCsv(event: StoredEvent, options: { neutraliseFormulas?: boolean } = {}): string {
  const values: Record<(typeof CSV_COLUMNS)[number], string | number | null> = {
    eventId: event.eventId,
    event: event.event,
    userId: event.userId,
    sessionId: event.sessionId,
    broadcastId: event.broadcastId,
    campaignId: event.campaignId,
    timestamp: event.timestamp,
    receivedAt: event.receivedAt,
    country: event.country,
    orderId: event.orderId,
    sponsorId: event.sponsorId,
    total: event.total,
    items: event.items === null ? null : JSON.stringify(event.items),
    data: JSON.stringify(event.data),
  };
  const cell = options.neutraliseFormulas ? neutralised : (value: string | number | null) => value;
  return `${CSV_COLUMNS.map((column) => csvField(cell(values[column]))).join(',')}\r\n`;
}

export function eventToNdjson(event: StoredEvent): string {
  return `${JSON.stringify(toExportRecord(event))}\n`;
}
