/** Which events the dashboard panels look at (one tenant). */
export interface AnalyticsFilter {
  tenantSeq: number;
  campaignId?: number;
  broadcastId?: string;
  /** Event time from (inclusive), epoch ms. */
  fromMs?: number;
  /** Event time up to (exclusive), epoch ms. */
  toMs?: number;
  country?: string;
  /** Narrows sponsor performance, revenue and funnel; the other panels ignore it. */
  sponsorId?: string;
}

/** Sessions are counted per minute: a session watches in every minute from its first event's to its last event's. */
export const VIEWER_MINUTE_MS = 60_000;

/** The rollups of both stores are per UTC hour (epoch ms). */
export const HOUR_MS = 3_600_000;

/** A change of the number of sessions watching, at the start of a minute (epoch ms). */
export interface ViewerStep {
  at: number;
  /** Sessions starting in this minute minus sessions that ended in the minute before. Never 0. */
  change: number;
}

/**
 * Concurrent sessions per minute, as the minutes where the count changes (ascending): the
 * count in a minute is the sum of the changes up to it. Buckets and peak are derived from it,
 * so that the peak does not depend on the bucket size.
 */
export interface ViewerSeries {
  steps: ViewerStep[];
  uniqueViewers: number;
  sessions: number;
}

export interface Engagement {
  joinedViewers: number;
  engagedViewers: number;
}

export interface PollOptionResult {
  optionIndex: number;
  option: string;
  votes: number;
}

/** One poll's counted votes. Stores list polls newest first: creation time descending, then id. */
export interface PollResult {
  pollId: string;
  broadcastId: string;
  /** When the poll was created, epoch ms. */
  createdAt: number;
  question: string;
  totalVotes: number;
  options: PollOptionResult[];
}

export interface SponsorRow {
  sponsorId: string;
  broadcastId: string;
  impressions: number;
  taps: number;
  sessionsWithImpression: number;
  convertedSessions: number;
  revenue: Array<{ currency: string; amount: number }>;
}

export interface RevenueRow {
  currency: string;
  orders: number;
  gross: number;
  items: number;
}

/** Newest poll first: creation time descending, then id ascending. */
export function newestPollFirst(a: Pick<PollResult, 'createdAt' | 'pollId'>, b: Pick<PollResult, 'createdAt' | 'pollId'>): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  return a.pollId < b.pollId ? -1 : a.pollId > b.pollId ? 1 : 0;
}

/** Entries of one contest: `contest.entered` events, and the viewers (userId, else sessionId) who entered. */
export interface ContestRow {
  contestId: string;
  entries: number;
  entrants: number;
}

/** Orders (first report of each `orderId`) in one minute and currency: for revenue over time. */
export interface RevenueMinute {
  /** Start of the minute, epoch ms. */
  at: number;
  currency: string;
  orders: number;
  gross: number;
}

export interface FunnelCounts {
  productViewed: number;
  cartItemAdded: number;
  checkoutStarted: number;
  checkoutCompleted: number;
}

/** The dashboard's queries over one tenant's events. */
export interface AnalyticsStore {
  viewerSeries(filter: AnalyticsFilter): Promise<ViewerSeries>;
  engagement(filter: AnalyticsFilter): Promise<Engagement>;
  /** Polls with counted votes in the filter, newest first (see `PollResult`). */
  pollResults(filter: AnalyticsFilter): Promise<PollResult[]>;
  sponsorPerformance(filter: AnalyticsFilter): Promise<SponsorRow[]>;
  revenue(filter: AnalyticsFilter): Promise<RevenueRow[]>;
  funnel(filter: AnalyticsFilter): Promise<FunnelCounts>;
  /** Per contest (the `contestId` of its entries), most entries first, then contestId. Ignores the sponsor filter. */
  contestEntries(filter: AnalyticsFilter): Promise<ContestRow[]>;
  /** Revenue per minute and currency, by minute then currency: the orders `revenue` counts, by the time of their first report. */
  revenueMinutes(filter: AnalyticsFilter): Promise<RevenueMinute[]>;
  /** The countries (ISO codes, sorted) of the events that match the filter, its country and sponsor aside: the choices of the country filter. */
  countries(filter: AnalyticsFilter): Promise<string[]>;
  /** Housekeeping of whatever the store keeps to answer fast; safe to call at any time. */
  compact(): Promise<void>;
}
