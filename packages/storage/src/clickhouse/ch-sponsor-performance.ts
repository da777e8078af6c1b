import type { SponsorRow } from '../analytics-store';
import { chNumber, type ChDatabase } from './ch-database';
import { ORDER_HOURS, SPONSOR_HOURS, type ChRollup } from './ch-rollups';
import { roomFor } from './query-size-settings';

interface MomentRow {
  sponsor: string;
  broadcast_id: string;
  moment_impressions: string;
  moment_taps: string;
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
 * What the broadcasts answered ahead keep of this panel (ch-broadcast-answers.ts), as relations
 * of their rows: per sponsor and broadcast, its moments' figures (`moment`), and the exposures of
 * their sponsored order reports that had an impression (`exposed`). `rowsOf(SPONSOR_HOURS)`
 * then gives the other broadcasts' rows only.
 */
export interface KeptSponsorRows {
  moments: string;
  exposed: string;
}

/**
 * Sponsor performance per sponsor and broadcast: impressions and taps of its moments, the
 * sessions that saw one, the sessions among those whose order (first report of its order id,
 * commerce `sponsorId` of that sponsor) counts for it, and that revenue per currency. `rowsOf`
 * gives the filter's rows of a rollup (ch-rollup-reads.ts), each event once.
 */
export async function sponsorPerformance(db: ChDatabase, rowsOf: (rollup: ChRollup) => Promise<string>, kept: KeptSponsorRows): Promise<SponsorRow[]> {
  const moments = await rowsOf(SPONSOR_HOURS);
  const orders = await rowsOf(ORDER_HOURS);
  const query = <T>(sql: string) => db.query<T>(sql, roomFor(sql));
  const [momentRows, orderRows] = await Promise.all([
    query<MomentRow>(
      `SELECT sponsor, broadcast_id, sum(impressions) AS moment_impressions, sum(taps) AS moment_taps, uniqExactIf(exposure_key, impressions > 0) AS exposed
       FROM ${moments} WHERE sponsor != '' GROUP BY sponsor, broadcast_id
       UNION ALL SELECT text AS sponsor, broadcast_id, toUInt64(number) AS moment_impressions, toUInt64(count) AS moment_taps, key AS exposed FROM ${kept.moments}`,
    ),
    query<OrderRow>(
      // Revenue per currency, and the converted sessions of all currencies together.
      `SELECT order_sponsor AS sponsor, order_broadcast AS broadcast_id, uniqExactMerge(converted_sessions) AS converted,
         groupArray(order_currency) AS currencies, groupArray(amount) AS amounts
       FROM (
       SELECT order_sponsor, order_broadcast, order_currency, sum(order_total) AS amount,
         uniqExactState(if(exposed, toNullable(order_session), NULL)) AS converted_sessions
       FROM (
         SELECT *, cityHash64(order_sponsor, order_broadcast, order_session) IN (SELECT exposure_key FROM ${moments} WHERE impressions > 0 UNION ALL SELECT key AS exposure_key FROM ${kept.exposed}) AS exposed
         FROM (
           SELECT argMin(assumeNotNull(report_sponsor), first_report) AS order_sponsor, argMin(broadcast_id, first_report) AS order_broadcast,
             argMin(report_session, first_report) AS order_session, argMin(total, first_report) AS order_total, argMin(currency, first_report) AS order_currency
           FROM ${orders} WHERE has_sponsor
           GROUP BY order_id))
       GROUP BY order_sponsor, order_broadcast, order_currency)
       GROUP BY order_sponsor, order_broadcast`,
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
  for (const m of momentRows) {
    const row = rowOf(m.sponsor, m.broadcast_id);
    row.impressions = chNumber(m.moment_impressions);
    row.taps = chNumber(m.moment_taps);
    row.sessionsWithImpression = chNumber(m.exposed);
  }
  for (const o of orderRows) {
    const row = rowOf(o.sponsor, o.broadcast_id);
    row.convertedSessions = chNumber(o.converted);
    row.revenue = o.currencies.map((currency, i) => ({ currency, amount: round2(chNumber(o.amounts[i] ?? 0)) }));
  }
  return [...rows.values()]
    .sort((a, b) => byText(a.sponsorId, b.sponsorId) || byText(a.broadcastId, b.broadcastId))
    .map((row) => ({ ...row, revenue: row.revenue.sort((a, b) => byText(a.currency, b.currency)) }));
}
