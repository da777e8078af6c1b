import { isCommerceEvent } from './event-names';
import type { StoredEvent } from './event-types';

/**
 * An event as exported and forwarded: spec 2.1 plus eventId, receivedAt and country; the
 * commerce fields (orderId, sponsorId, items, total) only on commerce events.
 */
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

/** The text encodings of a streamed export. */
export type ExportTextFormat = 'ndjson' | 'csv';

/**
 * First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
 * A CSV export for spreadsheets puts a single quote before every cell that starts with one.
 */
export const CSV_FORMULA_TRIGGERS = ['=', '+', '-', '@', '\t', '\r'] as const;

export interface ExportTextOptions {
  /** CSV only: cells starting with a CSV_FORMULA_TRIGGERS character get a leading `'`. Default false (values exactly as stored). */
  neutraliseFormulas?: boolean;
}

export type ExportRecord = Omit<StoredEvent, 'orderId' | 'sponsorId' | 'items' | 'total'> &
  Partial<Pick<StoredEvent, 'orderId' | 'sponsorId' | 'items' | 'total'>>;

export function toExportRecord(event: StoredEvent): ExportRecord {
  const record: ExportRecord = {
    eventId: event.eventId,
    event: event.event,
    userId: event.userId,
    sessionId: event.sessionId,
    broadcastId: event.broadcastId,
    campaignId: event.campaignId,
    timestamp: event.timestamp,
    receivedAt: event.receivedAt,
    country: event.country,
    data: event.data,
  };
  if (isCommerceEvent(event.event)) {
    record.orderId = event.orderId;
    record.sponsorId = event.sponsorId;
    record.items = event.items ?? [];
    record.total = event.total ?? 0;
  }
  return record;
}
