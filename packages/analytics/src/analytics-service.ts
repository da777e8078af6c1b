import { DEFAULT_TIME_ZONE, LiveViewerRegistry, SvcError, systemClock, type Clock, type LiveViewerCounts } from '@svc/protocol';
import type { AnalyticsFilter, AnalyticsStore, RevenueRow, Tenant } from '@svc/storage';
import { bucketSizeFor, LONGEST_DAY_AXIS_MS } from './bucket-size';
import { largestRemainderShares } from './largest-remainder';
import { revenueBuckets } from './revenue-buckets';
import { peakConcurrent, viewerBuckets } from './viewer-buckets';

/** The filters of the dashboard (DESIGN 7). Dates are already resolved to [fromMs, toMs). */
export type OverviewFilter = Omit<AnalyticsFilter, 'tenantSeq'>;

const ratio = (part: number, whole: number) => (whole ? Math.round((part / whole) * 10_000) / 10_000 : 0);
const round2 = (value: number) => Math.round(value * 100) / 100;

const revenueRow = (r: RevenueRow) => ({
  currency: r.currency,
  gross: r.gross,
  orders: r.orders,
  averageOrderValue: r.orders ? round2(r.gross / r.orders) : 0,
  itemsPerOrder: r.orders ? round2(r.items / r.orders) : 0,
});

/** Without an explicit start, the overview looks at this much history. */
export const DEFAULT_RANGE_MS = 7 * 24 * 60 * 60 * 1000;

/** How often the store tidies what commits appended for the dashboard. */
export const COMPACT_INTERVAL_MS = 30_000;

/** The six panels of the dashboard, computed from the event store for a set of filters. */
export class AnalyticsService {
  private timer: NodeJS.Timeout | null = null;
  private compacting: Promise<void> | null = null;

  constructor(
    private readonly store: AnalyticsStore,
    private readonly clock: Clock = systemClock,
    /** Viewers connected now (the realtime gateway provides them); default none (0 viewers). */
    private readonly live: LiveViewerCounts = new LiveViewerRegistry(),
  ) {}

  /** Viewers connected now to the broadcasts that match the filter. */
  private liveViewers(tenant: Tenant, filter: OverviewFilter): Promise<number> {
    return this.live.liveViewers(tenant.seq, { broadcastId: filter.broadcastId, campaignId: filter.campaignId, country: filter.country });
  }

  private liveViewersByBroadcast(tenant: Tenant): Promise<Map<string, number>> {
    return this.live.liveViewersByBroadcast(tenant.seq);
  }

  /** Broadcasts with viewers connected now, most watched first (then by id). */
  async watchingNow(tenant: Tenant): Promise<Array<{ broadcastId: string; live: number }>> {
    const counts = await this.liveViewersByBroadcast(tenant);
    return [...counts].map(([broadcastId, live]) => ({ broadcastId, live })).sort((a, b) => b.live - a.live || (a.broadcastId < b.broadcastId ? -1 : 1));
  }

  /** Compacts the store now and then every `intervalMs` (failures go to `onError`). */
  startMaintenance(onError: (error: unknown) => void, intervalMs: number = COMPACT_INTERVAL_MS): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.compact().catch(onError), intervalMs);
    this.timer.unref();
  }

  /** One compaction; concurrent calls share the one in progress. */
  compact(): Promise<void> {
    this.compacting ??= this.store.compact().finally(() => {
      this.compacting = null;
    });
    return this.compacting;
  }

  async stopMaintenance(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.compacting?.catch(() => undefined);
  }

  /** Viewers connected now to the matching broadcasts (cheap: no query). */
  liveCount(tenant: Tenant, filter: OverviewFilter): Promise<number> {
    return this.liveViewers(tenant, filter);
  }

  /**
   * Refuses a filter whose range would run backwards: without `to` the range ends now, so a
   * `from` at or after now is `invalid_range` (as `from` after `to` is, see parseExportQuery).
   */
  checkRange(input: OverviewFilter, now: number = this.clock.now()): void {
    if (input.toMs !== undefined || input.fromMs === undefined || input.fromMs < now) return;
    throw new SvcError('invalid_range', `Invalid query parameter from: must be before now (${new Date(now).toISOString()}) when to is not given.`, {
      errors: [{ path: '/query/from', code: 'invalid_range', message: 'must be before now when to is not given' }],
    });
  }

  async overview(tenant: Tenant, input: OverviewFilter) {
    const now = this.clock.now();
    this.checkRange(input, now);
    const filter: AnalyticsFilter = { ...input, tenantSeq: tenant.seq };
    const toMs = filter.toMs ?? now;
    const fromMs = filter.fromMs ?? toMs - DEFAULT_RANGE_MS;
    const ranged: AnalyticsFilter = { ...filter, fromMs, toMs };
    const timeZone = tenant.settings.timeZone ?? DEFAULT_TIME_ZONE;
    // The period just before, as long, with the same filters: the headline numbers are compared with it.
    const previous: AnalyticsFilter = { ...filter, fromMs: fromMs - (toMs - fromMs), toMs: fromMs };
    const [series, engagement, polls, sponsors, revenue, funnel, live, before, contests, revenueMinutes, countries] = await Promise.all([
      this.store.viewerSeries(ranged),
      this.store.engagement(ranged),
      this.store.pollResults(ranged),
      this.store.sponsorPerformance(ranged),
      this.store.revenue(ranged),
      this.store.funnel(ranged),
      this.liveViewers(tenant, input),
      Promise.all([this.store.viewerSeries(previous), this.store.engagement(previous), this.store.revenue(previous)]),
      this.store.contestEntries(ranged),
      this.store.revenueMinutes(ranged),
      this.store.countries(ranged),
    ]);
    const [beforeSeries, beforeEngagement, beforeRevenue] = before;
    const steps = [
      ['product.viewed', funnel.productViewed],
      ['cart.item_added', funnel.cartItemAdded],
      ['checkout.started', funnel.checkoutStarted],
      ['checkout.completed', funnel.checkoutCompleted],
    ] as const;
    // The chart's axis runs from the start of the range to its end or now, whichever is first;
    // for one broadcast, over its sessions (a broadcast lasts hours, not the week around it),
    // and on to now while viewers are watching it.
    let axisFrom = fromMs;
    let axisEnd = Math.min(toMs, now);
    const minutes = series.steps;
    if (input.broadcastId !== undefined && minutes.length) {
      axisFrom = minutes[0]!.at;
      axisEnd = live > 0 ? Math.max(axisEnd, minutes.at(-1)!.at) : minutes.at(-1)!.at;
    }
    // A start far before the data (from=0202-01-01) would make weeks of nothing: the axis then
    // starts at the first minute with data, though never later than a day chart's span before its end.
    const firstData = Math.min(minutes[0]?.at ?? Infinity, revenueMinutes[0]?.at ?? Infinity);
    axisFrom = Math.max(axisFrom, Math.min(firstData, axisEnd - LONGEST_DAY_AXIS_MS));
    const bucketMs = bucketSizeFor(Math.max(0, axisEnd - axisFrom));
    const points = axisEnd > axisFrom ? viewerBuckets(minutes, axisFrom, axisEnd, bucketMs, timeZone) : [];
    return {
      range: { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() },
      timeZone,
      filters: input,
      generatedAt: new Date(now).toISOString(),
      /** Panels that do not narrow by sponsor (DESIGN 7). */
      ignoresSponsor: ['viewers', 'engagement', 'polls', 'contests'],
      viewers: {
        live,
        peak: peakConcurrent(minutes),
        uniqueViewers: series.uniqueViewers,
        sessions: series.sessions,
        bucketMs,
        series: points.map((p) => ({ at: new Date(p.at).toISOString(), concurrent: p.concurrent })),
      },
      engagement: {
        rate: ratio(engagement.engagedViewers, engagement.joinedViewers),
        engagedViewers: engagement.engagedViewers,
        joinedViewers: engagement.joinedViewers,
      },
      // Newest poll first; shares in tenths of a percent that add up to 100% (largest remainder).
      polls: polls.map((poll) => {
        const shares = largestRemainderShares(poll.options.map((o) => o.votes));
        return {
          ...poll,
          createdAt: new Date(poll.createdAt).toISOString(),
          options: poll.options.map((o, i) => ({ ...o, share: shares[i]! })),
        };
      }),
      sponsors: sponsors.map((s) => ({
        sponsorId: s.sponsorId,
        broadcastId: s.broadcastId,
        impressions: s.impressions,
        taps: s.taps,
        tapRate: ratio(s.taps, s.impressions),
        conversion: ratio(s.convertedSessions, s.sessionsWithImpression),
        revenue: s.revenue,
      })),
      revenue: revenue.map(revenueRow),
      /** Per currency, gross and orders in the buckets of the viewer chart. */
      revenueOverTime: (axisEnd > axisFrom ? revenueBuckets(revenueMinutes, axisFrom, axisEnd, bucketMs, timeZone) : []).map((c) => ({
        currency: c.currency,
        points: c.points.map((p) => ({ at: new Date(p.at).toISOString(), gross: p.gross, orders: p.orders })),
      })),
      /** Entries per contest, most first. */
      contests,
      /** The countries of the range's events (other filters applied, country aside): the country filter's choices. */
      countries,
      /** The headline numbers of the period just before (same length, same filters). */
      previous: {
        range: { from: new Date(previous.fromMs!).toISOString(), to: new Date(previous.toMs!).toISOString() },
        viewers: { peak: peakConcurrent(beforeSeries.steps), uniqueViewers: beforeSeries.uniqueViewers, sessions: beforeSeries.sessions },
        engagement: {
          rate: ratio(beforeEngagement.engagedViewers, beforeEngagement.joinedViewers),
          engagedViewers: beforeEngagement.engagedViewers,
          joinedViewers: beforeEngagement.joinedViewers,
        },
        revenue: beforeRevenue.map(revenueRow),
      },
      funnel: steps.map(([step, sessions], i) => ({
        step,
        sessions,
        conversion: i === 0 ? 1 : ratio(sessions, steps[i - 1]![1]),
      })),
    };
  }
}

export type Overview = Awaited<ReturnType<AnalyticsService['overview']>>;
