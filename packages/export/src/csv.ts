import type { StoredEvent } from '@svc/protocol';

/** Column order of the CSV export (DESIGN 5.3); `items` and `data` hold JSON text. */
export const CSV_COLUMNS = [
  'eventId',
  'event',
  'userId',
  'sessionId',
  'broadcastId',
  'campaignId',
  'timestamp',
  'receivedAt',
  'country',
  'orderId',
  'sponsorId',
  'total',
  'items',
  'data',
] as const;

const NEEDS_QUOTES = /[",\r\n]/;

/**
 * One RFC 4180 field: quoted when it holds a comma, a quote or a line break, quotes doubled.
 * Values are kept exactly (no formula escaping): the export is meant for warehouses, which
 * must get back what was stored.
 */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  const text = String(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CRLF-terminated record. */
export function csvRecord(values: Array<string | number | null>): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

export const CSV_HEADER = csvRecord([...CSV_COLUMNS]);

export function eventToCsv(event: StoredEvent): string {
  return csvRecord([
    event.eventId,
    event.event,
    event.userId,
    event.sessionId,
    event.broadcastId,
    event.campaignId,
    event.timestamp,
    event.receivedAt,
    event.country,
    event.orderId,
    event.sponsorId,
    event.total,
    event.items === null ? null : JSON.stringify(event.items),
    JSON.stringify(event.data),
  ]);
}
