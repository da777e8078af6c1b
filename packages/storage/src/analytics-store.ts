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

export interface ViewerSeries {
  bucketMs: number;
  points: Array<{ at: number; concurrent: number }>;
  peak: number;
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

export interface FunnelCounts {
  productViewed: number;
  cartItemAdded: number;
  checkoutStarted: number;
  checkoutCompleted: number;
}

/** The dashboard's queries over one tenant's events. */
export interface AnalyticsStore {
  viewerSeries(filter: AnalyticsFilter, bucketMs: number): Promise<ViewerSeries>;
  engagement(filter: AnalyticsFilter): Promise<Engagement>;
  /** Polls with counted votes in the filter, newest first (see `PollResult`). */
  pollResults(filter: AnalyticsFilter): Promise<PollResult[]>;
  sponsorPerformance(filter: AnalyticsFilter): Promise<SponsorRow[]>;
  revenue(filter: AnalyticsFilter): Promise<RevenueRow[]>;
  funnel(filter: AnalyticsFilter): Promise<FunnelCounts>;
  /** Housekeeping of whatever the store keeps to answer fast; safe to call at any time. */
  compact(): Promise<void>;
}
