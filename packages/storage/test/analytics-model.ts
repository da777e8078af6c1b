import { countedVotes, pollVoteProblem, type CastVote, type PollDefinition } from '@svc/protocol';
import type { AnalyticsFilter, ContestRow, Engagement, FunnelCounts, PollResult, RevenueMinute, RevenueRow, SponsorRow, ViewerSeries } from '../src';
import type { EventRow } from '../src/records';

/**
 * The dashboard's metrics (DESIGN section 7) computed in plain code from a list of events: the
 * reference the store's answers are compared with. Written for clarity, not speed.
 */
const ENGAGING = new Set(['poll.voted', 'contest.entered', 'sponsor_moment.tapped', 'product.tapped']);
const round2 = (value: number) => Math.round(value * 100) / 100;
const viewerOf = (e: EventRow) => e.userId ?? e.sessionId;
const dataOf = (e: EventRow) => JSON.parse(e.data) as Record<string, unknown>;
const eventSponsor = (e: EventRow) => e.sponsorId ?? (dataOf(e).sponsorId as string | undefined) ?? null;
const byTime = (a: EventRow, b: EventRow) => a.timestampMs - b.timestampMs || (a.eventId < b.eventId ? -1 : 1);

export function filterEvents(events: EventRow[], f: AnalyticsFilter, withSponsor: boolean): EventRow[] {
  return events.filter(
    (e) =>
      e.tenantSeq === f.tenantSeq &&
      (f.campaignId === undefined || e.campaignId === f.campaignId) &&
      (f.broadcastId === undefined || e.broadcastId === f.broadcastId) &&
      (f.country === undefined || e.country === f.country) &&
      (f.fromMs === undefined || e.timestampMs >= f.fromMs) &&
      (f.toMs === undefined || e.timestampMs < f.toMs) &&
      (!withSponsor || f.sponsorId === undefined || eventSponsor(e) === f.sponsorId),
  );
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    groups.set(k, [...(groups.get(k) ?? []), item]);
  }
  return groups;
}

export function modelViewerSeries(all: EventRow[], f: AnalyticsFilter): ViewerSeries {
  const bucketMs = 60_000;
  const sessions = [...groupBy(filterEvents(all, f, false), (e) => `${e.sessionId}|${e.broadcastId}`).values()].map((events) => ({
    first: Math.floor(Math.min(...events.map((e) => e.timestampMs)) / bucketMs) * bucketMs,
    last: Math.floor(Math.max(...events.map((e) => e.timestampMs)) / bucketMs) * bucketMs,
    joined: events.some((e) => e.event === 'broadcast.joined'),
    viewer: viewerOf(events[0]!),
  }));
  // Per minute: +1 where a session starts, −1 in the minute after it ends; minutes where nothing changes are left out.
  const changes = new Map<number, number>();
  for (const s of sessions) {
    changes.set(s.first, (changes.get(s.first) ?? 0) + 1);
    changes.set(s.last + bucketMs, (changes.get(s.last + bucketMs) ?? 0) - 1);
  }
  const steps = [...changes].filter(([, change]) => change !== 0).map(([at, change]) => ({ at, change })).sort((a, b) => a.at - b.at);
  return {
    steps,
    uniqueViewers: new Set(sessions.filter((s) => s.joined).map((s) => s.viewer)).size,
    sessions: sessions.length,
  };
}

export function modelEngagement(all: EventRow[], f: AnalyticsFilter): Engagement {
  const events = filterEvents(all, f, false);
  const joined = new Set(events.filter((e) => e.event === 'broadcast.joined').map(viewerOf));
  const engaged = new Set(events.filter((e) => ENGAGING.has(e.event)).map(viewerOf));
  return { joinedViewers: joined.size, engagedViewers: [...joined].filter((v) => engaged.has(v)).length };
}

function firstOf(events: EventRow[], key: (e: EventRow) => string): EventRow[] {
  return [...groupBy([...events].sort(byTime), key).values()].map((group) => group[0]!);
}

/**
 * Poll results by the vote rule: votes that match a poll of the tenant (`polls`), in the range,
 * of which the first of each session and of each userId; every option of the poll listed.
 */
export function modelPollResults(all: EventRow[], f: AnalyticsFilter, polls: PollDefinition[]): PollResult[] {
  const votes = filterEvents(all, f, false).filter((e) => e.event === 'poll.voted');
  return [...polls]
    .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? -1 : 1))
    .flatMap((poll) => {
      const valid: CastVote[] = votes
        .filter((e) => {
          const data = dataOf(e);
          const claim = { broadcastId: e.broadcastId, optionIndex: data.optionIndex, optionSelected: data.optionSelected, receivedAtMs: e.receivedAtMs };
          return data.pollId === poll.id && !pollVoteProblem(poll, claim);
        })
        .map((e) => ({ eventId: e.eventId, sessionId: e.sessionId, userId: e.userId, timestampMs: e.timestampMs, optionIndex: Number(dataOf(e).optionIndex) }));
      const counted = countedVotes(valid);
      if (!counted.length) return [];
      const options = poll.options.map((option, optionIndex) => ({ optionIndex, option, votes: counted.filter((v) => v.optionIndex === optionIndex).length }));
      return [{ pollId: poll.id, broadcastId: poll.broadcastId, createdAt: poll.createdAtMs, question: poll.question, totalVotes: counted.length, options }];
    });
}

export function modelSponsorPerformance(all: EventRow[], f: AnalyticsFilter): SponsorRow[] {
  const events = filterEvents(all, f, true);
  const moments = events
    .filter((e) => e.event === 'sponsor_moment.viewed' || e.event === 'sponsor_moment.tapped')
    .map((e) => ({ sponsor: (dataOf(e).sponsorId as string | undefined) ?? null, broadcast: e.broadcastId, session: e.sessionId, viewed: e.event === 'sponsor_moment.viewed' }));
  const orders = firstOf(events.filter((e) => e.event === 'checkout.completed' && e.sponsorId !== null), (e) => String(e.orderId));
  const pairs = new Set([...moments.map((m) => `${m.sponsor}|${m.broadcast}`), ...orders.map((o) => `${o.sponsorId}|${o.broadcastId}`)]);
  return [...pairs]
    .map((pair) => pair.split('|') as [string, string])
    .filter(([sponsor]) => sponsor !== 'null')
    .sort(([s1, b1], [s2, b2]) => (s1 === s2 ? (b1 < b2 ? -1 : 1) : s1 < s2 ? -1 : 1))
    .map(([sponsor, broadcast]) => {
      const mine = moments.filter((m) => m.sponsor === sponsor && m.broadcast === broadcast);
      const myOrders = orders.filter((o) => o.sponsorId === sponsor && o.broadcastId === broadcast);
      const exposed = new Set(mine.filter((m) => m.viewed).map((m) => m.session));
      const converted = new Set(myOrders.map((o) => o.sessionId).filter((s) => exposed.has(s)));
      const byCurrency = groupBy(myOrders, (o) => String(dataOf(o).currency ?? '?'));
      return {
        sponsorId: sponsor,
        broadcastId: broadcast,
        impressions: mine.filter((m) => m.viewed).length,
        taps: mine.filter((m) => !m.viewed).length,
        sessionsWithImpression: exposed.size,
        convertedSessions: converted.size,
        revenue: [...byCurrency.keys()].sort().map((currency) => ({ currency, amount: round2(byCurrency.get(currency)!.reduce((sum, o) => sum + (o.total ?? 0), 0)) })),
      };
    });
}

export function modelRevenue(all: EventRow[], f: AnalyticsFilter): RevenueRow[] {
  const orders = firstOf(filterEvents(all, f, true).filter((e) => e.event === 'checkout.completed' && e.orderId !== null), (e) => String(e.orderId));
  const byCurrency = groupBy(orders, (o) => String(dataOf(o).currency ?? '?'));
  return [...byCurrency.keys()].sort().map((currency) => {
    const group = byCurrency.get(currency)!;
    const items = group.reduce((sum, o) => sum + (JSON.parse(o.items ?? '[]') as Array<{ quantity: number }>).reduce((n, i) => n + i.quantity, 0), 0);
    return { currency, orders: group.length, gross: round2(group.reduce((sum, o) => sum + (o.total ?? 0), 0)), items };
  });
}

export function modelContestEntries(all: EventRow[], f: AnalyticsFilter): ContestRow[] {
  const entries = filterEvents(all, f, false).filter((e) => e.event === 'contest.entered' && typeof dataOf(e).contestId === 'string' && dataOf(e).contestId !== '');
  return [...groupBy(entries, (e) => String(dataOf(e).contestId))]
    .map(([contestId, group]) => ({ contestId, entries: group.length, entrants: new Set(group.map(viewerOf)).size }))
    .sort((a, b) => b.entries - a.entries || (a.contestId < b.contestId ? -1 : 1));
}

export function modelRevenueMinutes(all: EventRow[], f: AnalyticsFilter): RevenueMinute[] {
  const orders = firstOf(filterEvents(all, f, true).filter((e) => e.event === 'checkout.completed' && e.orderId !== null), (e) => String(e.orderId));
  const minutes = groupBy(orders, (o) => `${Math.floor(o.timestampMs / 60_000) * 60_000}|${String(dataOf(o).currency ?? '?')}`);
  return [...minutes]
    .map(([key, group]) => {
      const [at, currency] = key.split('|') as [string, string];
      return { at: Number(at), currency, orders: group.length, gross: round2(group.reduce((sum, o) => sum + (o.total ?? 0), 0)) };
    })
    .sort((a, b) => a.at - b.at || (a.currency < b.currency ? -1 : 1));
}

export function modelCountries(all: EventRow[], f: AnalyticsFilter): string[] {
  const countries = filterEvents(all, { ...f, country: undefined }, false).map((e) => e.country).filter((c): c is string => typeof c === 'string' && c !== '');
  return [...new Set(countries)].sort();
}

export function modelFunnel(all: EventRow[], f: AnalyticsFilter): FunnelCounts {
  const steps = ['product.viewed', 'cart.item_added', 'checkout.started', 'checkout.completed'];
  const counts = [0, 0, 0, 0];
  for (const events of groupBy(filterEvents(all, f, true), (e) => e.sessionId).values()) {
    let after = -Infinity;
    for (let i = 0; i < steps.length; i++) {
      const times = events.filter((e) => e.event === steps[i] && e.timestampMs >= after).map((e) => e.timestampMs);
      if (!times.length) break;
      after = Math.min(...times);
      counts[i]!++;
    }
  }
  return { productViewed: counts[0]!, cartItemAdded: counts[1]!, checkoutStarted: counts[2]!, checkoutCompleted: counts[3]! };
}
