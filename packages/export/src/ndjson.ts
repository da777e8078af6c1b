import { toExportRecord, type StoredEvent } from '@svc/protocol';

/**
 * One NDJSON line: the export record as JSON and a line feed. JSON.stringify escapes every
 * line break inside strings, so each event is exactly one line.
 */
export function eventToNdjson(event: StoredEvent): string {
  return `${JSON.stringify(toExportRecord(event))}\n`;
}
