import { createHash } from 'node:crypto';
import { invalidCursor, isCursorId, isCursorTime } from '@svc/protocol';
import type { EventFilter, EventPosition } from '@svc/storage';

/** Where a paged export stands: after this event, over events received up to `asOfMs`. */
export interface ExportCursor extends EventPosition {
  asOfMs: number;
}

/** A cursor is tied to its query: reusing it with other filters is refused, not misread. */
export function filterFingerprint(filter: Omit<EventFilter, 'tenantSeq'> & { order?: string }): string {
  const canonical = JSON.stringify(Object.keys(filter).sort().map((key) => [key, filter[key as keyof typeof filter]]));
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 12);
}

export function encodeCursor(cursor: ExportCursor, fingerprint: string): string {
  return Buffer.from(JSON.stringify([cursor.timestampMs, cursor.eventId, cursor.asOfMs, fingerprint])).toString('base64url');
}

export function decodeCursor(text: string, fingerprint: string): ExportCursor {
  const invalid = invalidCursor;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid('is not a cursor this endpoint gave out');
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 4 ||
    !isCursorTime(parsed[0]) ||
    !isCursorId(parsed[1]) ||
    !isCursorTime(parsed[2])
  ) {
    throw invalid('is not a cursor this endpoint gave out');
  }
  if (parsed[3] !== fingerprint) throw invalid('belongs to a query with other filters');
  return { timestampMs: parsed[0] as number, eventId: parsed[1] as string, asOfMs: parsed[2] as number };
}
