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
  converted: string;
  currencies: string[];
  amounts: Array<number | null>;
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
      // Revenue per currency, and the converted sessions of all currencies together.
      `SELECT sponsor, broadcast_id, uniqExactMerge(converted_sessions) AS converted, groupArray(currency) AS currencies, groupArray(amount) AS amounts
       FROM (
       SELECT sponsor, broadcast_id, currency, sum(total) AS amount, uniqExactState(if(exposed, toNullable(session_id), NULL)) AS converted_sessions
       FROM (
         SELECT *, (sponsor, broadcast_id, session_id) IN (${exposures}) AS exposed
         FROM (
           SELECT argMin(assumeNotNull(sponsor_id), first) AS sponsor, argMin(broadcast_id, first) AS broadcast_id,
             argMin(session_id, first) AS session_id, argMin(ifNull(total, 0), first) AS total, argMin(${CURRENCY}, first) AS currency
           FROM (SELECT *, ${firstKey()} AS first FROM events WHERE ${eventConditions(filter, ['checkout.completed'], true)} AND isNotNull(sponsor_id))
           GROUP BY order_id))
       GROUP BY sponsor, broadcast_id, currency)
       GROUP BY sponsor, broadcast_id`,
    ),
  ]);
  const rows = new Map<string, SponsorRow>();
  const rowOf = (sponsorId: string, broadcastId: string) => {
    const key = JSON.stringify([sponsorId, broadcastId]);
    let row = rows.get(key);
    if (!row) {
      row = { sponsorId, broadcastId, impressions: 0, taps: 0, sessionsWithImpression: 0, convertedSessions: 0, revenue: [] };
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
    row.convertedSessions = chNumber(o.converted);
    row.revenue = o.currencies.map((currency, i) => ({ currency, amount: round2(chNumber(o.amounts[i] ?? 0)) }));
  }
  return [...rows.values()]
    .sort((a, b) => byText(a.sponsorId, b.sponsorId) || byText(a.broadcastId, b.broadcastId))
    .map((row) => ({ ...row, revenue: row.revenue.sort((a, b) => byText(a.currency, b.currency)) }));
}
