import type { AnalyticsFilter, SponsorRow } from '../analytics-store';
import { CURRENCY, dataString, eventConditions, firstKey, MOMENT_EVENTS } from './ch-analytics-sql';
import { chNumber, type ChDatabase } from './ch-database';

interface MomentRow {
  sponsor: string;
  broadcast_id: string;
  impressions: string;
  taps: string;
  exposed: string;
}

interface OrderRow {
  sponsor: string;
  broadcast_id: string;
  currency: string;
  amount: number | null;
  converted: string[];
}

const round2 = (value: number) => Math.round(value * 100) / 100;
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Sponsor performance per sponsor and broadcast: impressions and taps of its moments, the
 * sessions that saw one, the sessions among those whose order (first report of its order id,
 * commerce `sponsorId` of that sponsor) counts for it, and that revenue per currency. Events
 * are counted by id, so a copy not merged yet counts once.
 */
export async function sponsorPerformance(db: ChDatabase, filter: AnalyticsFilter): Promise<SponsorRow[]> {
  const moment = `SELECT ${dataString('sponsorId')} AS sponsor, broadcast_id, session_id, event, event_id
    FROM events WHERE ${eventConditions(filter, MOMENT_EVENTS, true)}`;
  const exposures = `SELECT ${dataString('sponsorId')}, broadcast_id, session_id
    FROM events WHERE ${eventConditions(filter, ['sponsor_moment.viewed'], true)}`;
  const [moments, orders] = await Promise.all([
    db.query<MomentRow>(
      `SELECT sponsor, broadcast_id, uniqExactIf(event_id, event = 'sponsor_moment.viewed') AS impressions,
         uniqExactIf(event_id, event = 'sponsor_moment.tapped') AS taps, uniqExactIf(session_id, event = 'sponsor_moment.viewed') AS exposed
       FROM (${moment}) WHERE sponsor != '' GROUP BY sponsor, broadcast_id`,
    ),
    db.query<OrderRow>(
      `SELECT sponsor, broadcast_id, currency, sum(total) AS amount, groupUniqArrayIf(session_id, exposed) AS converted
       FROM (
         SELECT *, (sponsor, broadcast_id, session_id) IN (${exposures}) AS exposed
         FROM (
           SELECT argMin(assumeNotNull(sponsor_id), first) AS sponsor, argMin(broadcast_id, first) AS broadcast_id,
             argMin(session_id, first) AS session_id, argMin(ifNull(total, 0), first) AS total, argMin(${CURRENCY}, first) AS currency
           FROM (SELECT *, ${firstKey()} AS first FROM events WHERE ${eventConditions(filter, ['checkout.completed'], true)} AND isNotNull(sponsor_id))
           GROUP BY order_id))
       GROUP BY sponsor, broadcast_id, currency`,
    ),
  ]);
  const rows = new Map<string, SponsorRow & { converted: Set<string> }>();
  const rowOf = (sponsorId: string, broadcastId: string) => {
    const key = JSON.stringify([sponsorId, broadcastId]);
    let row = rows.get(key);
    if (!row) {
      row = { sponsorId, broadcastId, impressions: 0, taps: 0, sessionsWithImpression: 0, convertedSessions: 0, revenue: [], converted: new Set() };
      rows.set(key, row);
    }
    return row;
  };
  for (const m of moments) {
    const row = rowOf(m.sponsor, m.broadcast_id);
    row.impressions = chNumber(m.impressions);
    row.taps = chNumber(m.taps);
    row.sessionsWithImpression = chNumber(m.exposed);
  }
  for (const o of orders) {
    const row = rowOf(o.sponsor, o.broadcast_id);
    row.revenue.push({ currency: o.currency, amount: round2(chNumber(o.amount ?? 0)) });
    for (const session of o.converted) row.converted.add(session);
  }
  return [...rows.values()]
    .sort((a, b) => byText(a.sponsorId, b.sponsorId) || byText(a.broadcastId, b.broadcastId))
    .map(({ converted, ...row }) => ({ ...row, convertedSessions: converted.size, revenue: row.revenue.sort((a, b) => byText(a.currency, b.currency)) }));
}
