/** Client events may be at most this far ahead of the server clock after correction. */
export const MAX_FUTURE_SKEW_MS = 60 * 60 * 1000;
/** Client events older than this are refused (server-to-server senders may backfill). */
export const MAX_CLIENT_EVENT_AGE_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Corrects a client timestamp for the client's clock error, as Segment does:
 * `timestamp = receivedAt − (sentAt − timestamp)`. Without `sentAt` the timestamp is trusted.
 * All values are epoch milliseconds.
 */
export function correctClockSkew(timestampMs: number, receivedAtMs: number, sentAtMs?: number): number {
  if (sentAtMs === undefined) return timestampMs;
  return receivedAtMs - (sentAtMs - timestampMs);
}

export type TimestampVerdict = 'ok' | 'timestamp_in_future' | 'timestamp_too_old';

export function checkTimestamp(
  timestampMs: number,
  receivedAtMs: number,
  options: { allowOld: boolean },
): TimestampVerdict {
  if (timestampMs - receivedAtMs > MAX_FUTURE_SKEW_MS) return 'timestamp_in_future';
  if (!options.allowOld && receivedAtMs - timestampMs > MAX_CLIENT_EVENT_AGE_MS) return 'timestamp_too_old';
  return 'ok';
}
