const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * Bucket of the viewer chart for the span it shows: per minute up to 6 hours (a live
 * broadcast), 15 minutes up to 2 days, hours up to 4 days, days beyond (hours made a week a
 * flat line with spikes). Keeps charts under ~400 points for a year.
 */
export function bucketSizeFor(rangeMs: number): number {
  if (rangeMs <= 6 * HOUR) return MINUTE;
  if (rangeMs <= 2 * DAY) return 15 * MINUTE;
  if (rangeMs <= 4 * DAY) return HOUR;
  return DAY;
}
