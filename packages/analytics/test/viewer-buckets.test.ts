import { describe, expect, it } from 'vitest';
import { isTimeZone, ManualClock, startOfLocalDay } from '@svc/protocol';
import type { AnalyticsStore, Tenant, ViewerStep } from '@svc/storage';
import { AnalyticsService } from '../src/analytics-service';
import { bucketSizeFor, MAX_CHART_BUCKETS } from '../src/bucket-size';
import { peakConcurrent, viewerBuckets } from '../src/viewer-buckets';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 10, 10, 10);

/** Sessions as [first minute, last minute] offsets from T0, turned into per-minute steps. */
function stepsOf(sessions: Array<[number, number]>): ViewerStep[] {
  const changes = new Map<number, number>();
  for (const [first, last] of sessions) {
    const start = T0 + first * MINUTE;
    const end = T0 + (last + 1) * MINUTE;
    changes.set(start, (changes.get(start) ?? 0) + 1);
    changes.set(end, (changes.get(end) ?? 0) - 1);
  }
  return [...changes].filter(([, c]) => c).map(([at, change]) => ({ at, change })).sort((a, b) => a.at - b.at);
}

describe('viewer buckets', () => {
  // Two sessions that never overlap within a minute, both inside one 15-minute bucket.
  const steps = stepsOf([[0, 4], [6, 9]]);

  it('gives the peak as the highest count in any one minute, whatever the bucket size', () => {
    expect(peakConcurrent(steps)).toBe(1);
    for (const bucket of [MINUTE, 15 * MINUTE, HOUR, DAY]) {
      const points = viewerBuckets(steps, T0 - HOUR, T0 + 2 * HOUR, bucket, 'UTC');
      expect(Math.max(...points.map((p) => p.concurrent)), String(bucket)).toBe(1);
    }
    expect(peakConcurrent(stepsOf([[0, 4], [4, 9], [3, 4]]))).toBe(3);
  });

  it('runs the axis over the whole span, with zeros where nobody watched', () => {
    const points = viewerBuckets(steps, T0 - HOUR, T0 + 3 * HOUR, HOUR, 'UTC');
    expect(points).toEqual([
      { at: T0 - HOUR, concurrent: 0 },
      { at: T0, concurrent: 1 },
      { at: T0 + HOUR, concurrent: 0 },
      { at: T0 + 2 * HOUR, concurrent: 0 },
    ]);
  });

  it("starts day buckets at the time zone's midnight, 23 hours long on the day clocks go forward", () => {
    const berlin = viewerBuckets([], Date.UTC(2026, 2, 28, 12), Date.UTC(2026, 2, 30, 12), DAY, 'Europe/Berlin');
    expect(berlin.map((p) => new Date(p.at).toISOString())).toEqual(['2026-03-27T23:00:00.000Z', '2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z']);
    const kolkata = viewerBuckets([], T0, T0 + 2 * HOUR, HOUR, 'Asia/Kolkata');
    expect(kolkata.map((p) => new Date(p.at).toISOString())).toEqual(['2026-11-10T09:30:00.000Z', '2026-11-10T10:30:00.000Z', '2026-11-10T11:30:00.000Z']);
  });

  it('picks minutes for a broadcast, 15 minutes for a day or two, hours for a few days, days for a week or more', () => {
    expect([2 * HOUR, DAY, 2 * DAY, 3 * DAY, 7 * DAY, 90 * DAY].map(bucketSizeFor)).toEqual([MINUTE, 15 * MINUTE, 15 * MINUTE, HOUR, DAY, DAY]);
  });

  it('grows the bucket to weeks, then whole numbers of weeks, so that no span makes more than MAX_CHART_BUCKETS', () => {
    expect([400 * DAY, 401 * DAY, 400 * 7 * DAY, 401 * 7 * DAY].map(bucketSizeFor)).toEqual([DAY, 7 * DAY, 7 * DAY, 14 * DAY]);
    const twoMillennia = Date.UTC(2026, 10, 21) - Date.UTC(2, 0, 1);
    const bucket = bucketSizeFor(twoMillennia);
    expect(bucket % (7 * DAY)).toBe(0);
    expect(twoMillennia / bucket).toBeLessThanOrEqual(MAX_CHART_BUCKETS);
  });

  it("starts week buckets on the time zone's Mondays", () => {
    const berlin = viewerBuckets([], Date.UTC(2026, 10, 11), Date.UTC(2026, 10, 20), 7 * DAY, 'Europe/Berlin');
    expect(berlin.map((p) => new Date(p.at).toISOString())).toEqual(['2026-11-08T23:00:00.000Z', '2026-11-15T23:00:00.000Z']);
  });

  it('knows IANA time zones and local midnights', () => {
    expect(['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata'].every(isTimeZone)).toBe(true);
    expect(['Mars/Olympus', 'CET; DROP', '', '../etc'].some(isTimeZone)).toBe(false);
    expect(new Date(startOfLocalDay('America/New_York', 2026, 11, 10)).toISOString()).toBe('2026-11-10T05:00:00.000Z');
    expect(new Date(startOfLocalDay('Europe/Berlin', 2026, 7, 1)).toISOString()).toBe('2026-06-30T22:00:00.000Z');
  });
});

describe('the overview chart', () => {
  const tenant = (timeZone?: string) => ({ seq: 1, id: 't', name: 'T', createdAt: 0, retentionMonths: 12, settings: { timeZone } }) as unknown as Tenant;
  const store = (minutes: ViewerStep[]): AnalyticsStore => ({
    viewerSeries: async () => ({ steps: minutes, uniqueViewers: 2, sessions: 2 }),
    engagement: async () => ({ joinedViewers: 0, engagedViewers: 0 }),
    pollResults: async () => [],
    sponsorPerformance: async () => [],
    revenue: async () => [],
    funnel: async () => ({ productViewed: 0, cartItemAdded: 0, checkoutStarted: 0, checkoutCompleted: 0 }),
    contestEntries: async () => [],
    revenueMinutes: async () => [],
    countries: async () => [],
    compact: async () => undefined,
  });

  it('runs the axis to now, not to the last session', async () => {
    const now = T0 + 5 * HOUR;
    const service = new AnalyticsService(store(stepsOf([[0, 4], [6, 9]])), new ManualClock(now));
    const o = await service.overview(tenant(), { fromMs: T0 - 10 * HOUR });
    expect(o.viewers.bucketMs).toBe(15 * MINUTE);
    expect(o.viewers.series.at(-1)!.at).toBe(new Date(now - 15 * MINUTE).toISOString());
    expect(o.viewers.peak).toBe(1);
    expect(o.timeZone).toBe('UTC');
  });

  it('starts the axis of a range from the far past at its first data, or a day chart before now without data', async () => {
    const now = T0 + 5 * HOUR;
    const farPast = Date.UTC(202, 0, 1);
    const service = new AnalyticsService(store(stepsOf([[0, 4], [6, 9]])), new ManualClock(now));
    const o = await service.overview(tenant(), { fromMs: farPast });
    expect(o.viewers.bucketMs).toBe(DAY);
    expect(o.viewers.series.length).toBeLessThanOrEqual(MAX_CHART_BUCKETS + 1);
    expect(o.viewers.series.at(-1)!).toEqual({ at: new Date(Date.UTC(2026, 10, 10)).toISOString(), concurrent: 1 });
    expect(o.range.from).toBe(new Date(farPast).toISOString());
    // Data since 2020: weeks from then on, not from the year 202.
    const since2020 = stepsOf([[-(T0 - Date.UTC(2020, 0, 6, 12)) / MINUTE, 0]]);
    const weeks = await new AnalyticsService(store(since2020), new ManualClock(now)).overview(tenant(), { fromMs: farPast });
    expect(weeks.viewers.bucketMs).toBe(7 * DAY);
    expect(weeks.viewers.series[0]).toEqual({ at: '2020-01-06T00:00:00.000Z', concurrent: 1 });
    expect(weeks.viewers.series.length).toBeLessThanOrEqual(MAX_CHART_BUCKETS + 1);
    const empty = await new AnalyticsService(store([]), new ManualClock(now)).overview(tenant(), { fromMs: farPast });
    expect(empty.viewers.series.length).toBeLessThanOrEqual(MAX_CHART_BUCKETS + 1);
    expect(empty.viewers.series.at(-1)!.at).toBe(new Date(Date.UTC(2026, 10, 10)).toISOString());
  });

  it("shows one broadcast over its own sessions, per minute, and labels the tenant's time zone", async () => {
    const service = new AnalyticsService(store(stepsOf([[0, 4], [6, 9]])), new ManualClock(T0 + 3 * DAY));
    const o = await service.overview(tenant('Europe/Berlin'), { broadcastId: 'b1' });
    expect(o.timeZone).toBe('Europe/Berlin');
    expect(o.viewers.bucketMs).toBe(MINUTE);
    expect(o.viewers.series).toHaveLength(10);
    expect(o.viewers.series[0]).toEqual({ at: new Date(T0).toISOString(), concurrent: 1 });
    expect(o.viewers.series[5]).toEqual({ at: new Date(T0 + 5 * MINUTE).toISOString(), concurrent: 0 });
  });
});
