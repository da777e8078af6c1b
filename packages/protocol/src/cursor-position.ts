import { SvcError } from './error-catalogue';

/**
 * What the service's opaque page cursors point at: a moment (epoch milliseconds) and a UUID.
 * A cursor comes back from the client, so every decoder checks both against what the storage
 * can take (a moment a TIMESTAMP holds, a well-formed UUID) and refuses anything else with 400
 * `validation_failed`, never letting a crafted one reach a query (where it failed as a 500).
 */

/** Latest moment a cursor may hold: the end of JavaScript's Date range (year 275760), well inside DuckDB's TIMESTAMP. */
export const MAX_CURSOR_TIME_MS = 8.64e15;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `value` is a moment a cursor may hold: whole milliseconds within Date's range. */
export function isCursorTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && Math.abs(value) <= MAX_CURSOR_TIME_MS;
}

/** Whether `value` is a UUID as the service writes them (lowercase, dashed). */
export function isCursorId(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/** The answer to a cursor that fails its check. */
export function invalidCursor(message = 'is not a cursor this endpoint gave out'): SvcError {
  return new SvcError('validation_failed', `Invalid query parameter cursor: ${message}.`, {
    errors: [{ path: '/query/cursor', code: 'invalid_value', message }],
  });
}

/** The moment and id of a `<ms>|<uuid>` cursor text (already base64url-decoded), or throws `invalidCursor()`. */
export function parseTimeIdCursor(text: string): { ms: number; id: string } {
  const parts = text.split('|');
  const ms = parts.length === 2 && /^-?\d{1,16}$/.test(parts[0]!) ? Number(parts[0]) : Number.NaN;
  if (parts.length !== 2 || !isCursorTime(ms) || !isCursorId(parts[1])) throw invalidCursor();
  return { ms, id: parts[1]! };
}
