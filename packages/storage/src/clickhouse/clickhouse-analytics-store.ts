import { VIEWER_MINUTE_MS, type AnalyticsFilter, type AnalyticsStore, type ContestRow, type RevenueMinute, type Engagement, type FunnelCounts, type PollResult, type RevenueRow, type SponsorRow, type ViewerSeries } from '../analytics-store';
import { CURRENCY, dataString, ENGAGING_EVENTS, eventConditions, firstKey, FUNNEL_EVENTS, ITEM_COUNT, VIEWER } from './ch-analytics-sql';
import { chNumber, type ChDatabase } from './ch-database';
import { pollResults, type PollLookup } from './ch-poll-results';
import { sponsorPerformance } from './ch-sponsor-performance';
import { sqlInteger, sqlList } from './sql-literal';

const round2 = (value: number) => Math.round(value * 100) / 100;

/**
 * The dashboard's metrics (DESIGN section 7, docs/analytics.md) in SQL over the ClickHouse
 * `events` table, with the same definitions and answers as `DuckDbAnalyticsStore`. Each panel
 * reads the tenant's events of the range (the table's sort key leads with tenant and time) and
 * only the columns it needs; no rollup table: measured, a panel over the raw events answers
 * within the dashboard's budget (docs/benchmarks.md, "Dashboard on ClickHouse").
 *
 * Copies of a retried event that ClickHouse has not merged yet never change an answer: see
 * ch-analytics-sql.ts. Poll questions and options come from `polls` (content lives outside
 * ClickHouse) and are joined in Node.
 */
export class ClickHouseAnalyticsStore implements AnalyticsStore {
  /**
   * @param db the ClickHouse database holding `events` (migrated by `ChDatabase.open`).
   * @param polls the polls the service knows, e.g. the content service's `PollCatalogue`.
   */
  constructor(
    private readonly db: ChDatabase,
    private readonly polls: PollLookup,
  ) {}

  async viewerSeries(filter: AnalyticsFilter): Promise<ViewerSeries> {
    const bucket = sqlInteger(VIEWER_MINUTE_MS);
    // A session (in one broadcast) lasts from its first to its last event and counts in every
    // minute from the one it starts in to the one it ends in: +1 there, −1 after. Its viewer is
    // that of its first event (a session keeps one userId; DuckDB takes any of its rows).
    const [row] = await this.db.query<{ sessions: string; viewers: string; first: string; last: string; steps: [string[], string[]] }>(
      `SELECT count() AS sessions, uniqExactIf(viewer, joined) AS viewers, min(first_bucket) AS first, max(last_bucket) AS last,
         sumMap([first_bucket, last_bucket + ${bucket}], [toInt64(1), toInt64(-1)]) AS steps
       FROM (
         SELECT intDiv(min(timestamp_ms), ${bucket}) * ${bucket} AS first_bucket, intDiv(max(timestamp_ms), ${bucket}) * ${bucket} AS last_bucket,
           argMin(${VIEWER}, timestamp_ms) AS viewer, max(event = 'broadcast.joined') AS joined
         FROM events WHERE ${eventConditions(filter, 'any', false)}
         GROUP BY session_id, broadcast_id)`,
    );
    const sessions = chNumber(row?.sessions ?? 0);
    const steps: ViewerSeries['steps'] = [];
    if (row && sessions > 0) {
      row.steps[0].forEach((at, i) => {
        const change = chNumber(row.steps[1][i]!);
        if (change !== 0) steps.push({ at: chNumber(at), change });
      });
      steps.sort((a, b) => a.at - b.at);
    }
    return {
      steps,
      uniqueViewers: chNumber(row?.viewers ?? 0),
      sessions,
    };
  }

  async engagement(filter: AnalyticsFilter): Promise<Engagement> {
    const [row] = await this.db.query<{ joined_viewers: string; engaged_viewers: string }>(
      `SELECT countIf(joined) AS joined_viewers, countIf(joined AND engaged) AS engaged_viewers
       FROM (
         SELECT max(event = 'broadcast.joined') AS joined, max(event IN ${sqlList(ENGAGING_EVENTS)}) AS engaged
         FROM events WHERE ${eventConditions(filter, ['broadcast.joined', ...ENGAGING_EVENTS], false)}
         GROUP BY ${VIEWER})`,
    );
    return { joinedViewers: chNumber(row?.joined_viewers ?? 0), engagedViewers: chNumber(row?.engaged_viewers ?? 0) };
  }

  pollResults(filter: AnalyticsFilter): Promise<PollResult[]> {
    return pollResults(this.db, this.polls, filter);
  }

  sponsorPerformance(filter: AnalyticsFilter): Promise<SponsorRow[]> {
    return sponsorPerformance(this.db, filter);
  }

  async revenue(filter: AnalyticsFilter): Promise<RevenueRow[]> {
    // An order reported twice counts once: its first report.
    const rows = await this.db.query<{ currency: string; orders: string; gross: number | null; items: string }>(
      `SELECT currency, count() AS orders, sum(order_total) AS gross, sum(item_count) AS items
       FROM (
         SELECT argMin(${CURRENCY}, first) AS currency, argMin(ifNull(total, 0), first) AS order_total, argMin(${ITEM_COUNT}, first) AS item_count
         FROM (SELECT *, ${firstKey()} AS first FROM events WHERE ${eventConditions(filter, ['checkout.completed'], true)} AND isNotNull(order_id))
         GROUP BY order_id)
       GROUP BY currency`,
    );
    return rows
      .map((row) => ({ currency: row.currency, orders: chNumber(row.orders), gross: round2(chNumber(row.gross ?? 0)), items: chNumber(row.items) }))
      .sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0));
  }

  async contestEntries(filter: AnalyticsFilter): Promise<ContestRow[]> {
    // Copies of an event share its id: entries count distinct ids.
    const rows = await this.db.query<{ contest_id: string; entries: string; entrants: string }>(
      `SELECT contest_id, uniqExact(event_id) AS entries, uniqExact(viewer) AS entrants
       FROM (SELECT ${dataString('contestId')} AS contest_id, event_id, ${VIEWER} AS viewer FROM events WHERE ${eventConditions(filter, ['contest.entered'], false)})
       WHERE contest_id != ''
       GROUP BY contest_id`,
    );
    return rows
      .map((row) => ({ contestId: row.contest_id, entries: chNumber(row.entries), entrants: chNumber(row.entrants) }))
      .sort((a, b) => b.entries - a.entries || (a.contestId < b.contestId ? -1 : a.contestId > b.contestId ? 1 : 0));
  }

  async countries(filter: AnalyticsFilter): Promise<string[]> {
    const rows = await this.db.query<{ country: string }>(
      `SELECT DISTINCT country FROM events WHERE ${eventConditions({ ...filter, country: undefined }, 'any', false)} AND isNotNull(country) AND country != ''`,
    );
    return rows.map((row) => row.country).sort();
  }

  async revenueMinutes(filter: AnalyticsFilter): Promise<RevenueMinute[]> {
    // The orders of `revenue`, each at the time of its first report.
    const rows = await this.db.query<{ at: string; currency: string; orders: string; gross: number | null }>(
      `SELECT intDiv(order_ms, ${sqlInteger(VIEWER_MINUTE_MS)}) * ${sqlInteger(VIEWER_MINUTE_MS)} AS at, currency, count() AS orders, sum(order_total) AS gross
       FROM (
         SELECT argMin(timestamp_ms, first) AS order_ms, argMin(${CURRENCY}, first) AS currency, argMin(ifNull(total, 0), first) AS order_total
         FROM (SELECT *, ${firstKey()} AS first FROM events WHERE ${eventConditions(filter, ['checkout.completed'], true)} AND isNotNull(order_id))
         GROUP BY order_id)
       GROUP BY at, currency`,
    );
    return rows
      .map((row) => ({ at: chNumber(row.at), currency: row.currency, orders: chNumber(row.orders), gross: round2(chNumber(row.gross ?? 0)) }))
      .sort((a, b) => a.at - b.at || (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0));
  }

  async funnel(filter: AnalyticsFilter): Promise<FunnelCounts> {
    // Per session: the first product view, then the first of each later step at or after the step before.
    const [row] = await this.db.query<{ a: string; b: string; c: string; d: string }>(
      `SELECT countIf(s1) AS a, countIf(s2) AS b, countIf(s3) AS c, countIf(s4) AS d
       FROM (
         SELECT countIf(event = 'product.viewed') > 0 AS s1, minIf(timestamp_ms, event = 'product.viewed') AS t1,
           arrayFilter(t -> t >= t1, groupArrayIf(timestamp_ms, event = 'cart.item_added')) AS after1,
           s1 AND notEmpty(after1) AS s2, arrayReduce('min', after1) AS t2,
           arrayFilter(t -> t >= t2, groupArrayIf(timestamp_ms, event = 'checkout.started')) AS after2,
           s2 AND notEmpty(after2) AS s3, arrayReduce('min', after2) AS t3,
           s3 AND notEmpty(arrayFilter(t -> t >= t3, groupArrayIf(timestamp_ms, event = 'checkout.completed'))) AS s4
         FROM events WHERE ${eventConditions(filter, FUNNEL_EVENTS, true)}
         GROUP BY session_id)`,
    );
    return { productViewed: chNumber(row?.a ?? 0), cartItemAdded: chNumber(row?.b ?? 0), checkoutStarted: chNumber(row?.c ?? 0), checkoutCompleted: chNumber(row?.d ?? 0) };
  }

  /** Nothing to tidy: no rollups are kept, and ClickHouse merges its parts (and copies) by itself. */
  async compact(): Promise<void> {}
}
