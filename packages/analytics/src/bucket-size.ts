const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * Bucket of the viewer series for a time range: per minute up to 6 hours (the live view),
 * then 15 minutes up to 2 days, hours up to 31 days, days beyond. Keeps charts under ~750 points.
 */
export function bucketSizeFor(rangeMs: number): number {
  if (rangeMs <= 6 * HOUR) return MINUTE;
  if (rangeMs <= 2 * DAY) return 15 * MINUTE;
  if (rangeMs <= 31 * DAY) return HOUR;
  return DAY;
}
