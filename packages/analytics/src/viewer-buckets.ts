import type { ViewerStep } from '@svc/storage';
import { instantOfLocal, zoneOffsetMs } from '@svc/protocol';
import { WEEK_MS } from './bucket-size';

/** Local Monday 1970-01-05, where week buckets are counted from (the epoch was a Thursday). */
const FIRST_MONDAY_MS = 4 * 24 * 60 * 60 * 1000;

/**
 * Where a bucket of `bucketMs` (a minute to a day, or whole weeks starting on Mondays) that
 * holds `atMs` starts, in local time of `timeZone`.
 */
export function bucketStart(atMs: number, bucketMs: number, timeZone: string): number {
  const local = atMs + zoneOffsetMs(timeZone, atMs);
  const anchor = bucketMs % WEEK_MS === 0 ? FIRST_MONDAY_MS : 0;
  return instantOfLocal(timeZone, Math.floor((local - anchor) / bucketMs) * bucketMs + anchor);
}

/** The start of the bucket after the one starting at `startMs` (a local day may last 23 or 25 hours). */
export function nextBucketStart(startMs: number, bucketMs: number, timeZone: string): number {
  const next = instantOfLocal(timeZone, startMs + zoneOffsetMs(timeZone, startMs) + bucketMs);
  return next > startMs ? next : startMs + bucketMs;
}

/** The highest number of sessions watching in any one minute (0 without sessions). */
export function peakConcurrent(steps: readonly ViewerStep[]): number {
  let running = 0;
  let peak = 0;
  for (const step of steps) {
    running += step.change;
    peak = Math.max(peak, running);
  }
  return peak;
}

/**
 * The viewer chart from the per-minute counts: one point per bucket from the one holding
 * `fromMs` up to the one holding `endMs` (exclusive end; the axis runs there even without
 * sessions), each the highest per-minute count within it, so that a bucket never shows fewer
 * viewers than the peak of its minutes and the chart's maximum is the peak whatever the bucket.
 */
export function viewerBuckets(steps: readonly ViewerStep[], fromMs: number, endMs: number, bucketMs: number, timeZone: string): Array<{ at: number; concurrent: number }> {
  const points: Array<{ at: number; concurrent: number }> = [];
  let running = 0;
  let i = 0;
  for (let start = bucketStart(fromMs, bucketMs, timeZone); start < endMs; ) {
    const next = nextBucketStart(start, bucketMs, timeZone);
    while (i < steps.length && steps[i]!.at <= start) running += steps[i++]!.change;
    let max = running;
    while (i < steps.length && steps[i]!.at < next) {
      running += steps[i++]!.change;
      max = Math.max(max, running);
    }
    points.push({ at: start, concurrent: max });
    start = next;
  }
  return points;
}
