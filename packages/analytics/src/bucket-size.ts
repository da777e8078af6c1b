const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
export const WEEK_MS = 7 * DAY_MS;

/** The most buckets a chart is cut into (one more when the span starts inside a bucket). */
export const MAX_CHART_BUCKETS = 400;

/** The longest span shown in day buckets; longer spans get weeks. */
export const LONGEST_DAY_AXIS_MS = MAX_CHART_BUCKETS * DAY_MS;

/**
 * Bucket of the viewer chart for the span it shows: per minute up to 6 hours (a live
 * broadcast), 15 minutes up to 2 days, hours up to 4 days (hours made a week a flat line with
 * spikes), days up to 400 days, weeks beyond, and whole numbers of weeks when even weeks would
 * make more than `MAX_CHART_BUCKETS` buckets (decades of backfilled history).
 */
export function bucketSizeFor(rangeMs: number): number {
  if (rangeMs <= 6 * HOUR_MS) return MINUTE_MS;
  if (rangeMs <= 2 * DAY_MS) return 15 * MINUTE_MS;
  if (rangeMs <= 4 * DAY_MS) return HOUR_MS;
  if (rangeMs <= LONGEST_DAY_AXIS_MS) return DAY_MS;
  return Math.ceil(rangeMs / (MAX_CHART_BUCKETS * WEEK_MS)) * WEEK_MS;
}
