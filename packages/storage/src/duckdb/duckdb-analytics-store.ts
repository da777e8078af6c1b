import { listValue } from '@duckdb/node-api';
import {
  newestPollFirst,
  type AnalyticsFilter,
  type AnalyticsStore,
  type ContestRow,
  type RevenueMinute,
  type Engagement,
  type FunnelCounts,
  type PollResult,
  type RevenueRow,
  type SponsorRow,
  type ViewerSeries,
  HOUR_MS,
  VIEWER_MINUTE_MS,
} from '../analytics-store';
import { compactRollups, deriveVotesAgain, SESSION_HOURS, SPONSOR_HOURS, VIEW_HOURS, VOTE_HOURS } from './analytics-rollups';
import { aloneAndGrouped, eventRows, hourPartials, Params, type WholeHours } from './analytics-sql';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { numberOrZero } from './row-values';

/** The dashboard's metrics (DESIGN section 7) in SQL over the rollups of the embedded database. */
export class DuckDbAnalyticsStore implements AnalyticsStore {
  /** The answer of `wholeHours` for a filter while it is being worked out: the panels of one overview share it. */
  private readonly hoursInProgress = new WeakMap<AnalyticsFilter, Promise<WholeHours>>();

  constructor(private readonly db: DuckDbDatabase) {}

  /**
   * The hours of the range the rollup tables can answer: the whole hours inside it, and an end
   * hour that holds no event outside it (a range that ends now, as in live mode, usually has
   * one), so that only the rest is derived from events. Panels asked at the same time with the
   * same filter (an overview) share one lookup.
   */
  private wholeHours(filter: AnalyticsFilter): Promise<WholeHours> {
    let hours = this.hoursInProgress.get(filter);
    if (!hours) {
      hours = this.lookUpWholeHours(filter).finally(() => this.hoursInProgress.delete(filter));
      this.hoursInProgress.set(filter, hours);
    }
    return hours;
  }

  private async lookUpWholeHours(filter: AnalyticsFilter): Promise<WholeHours> {
    // Every event committed before the question is in the rollups before they are read.
    await this.db.rollups.settled();
    const { fromMs, toMs } = filter;
    const hours: WholeHours = {
      from: fromMs === undefined ? undefined : Math.ceil(fromMs / HOUR_MS) * HOUR_MS,
      to: toMs === undefined ? undefined : Math.floor(toMs / HOUR_MS) * HOUR_MS,
    };
    const fromHour = fromMs !== undefined && hours.from! > fromMs ? hours.from! - HOUR_MS : null;
    const toHour = toMs !== undefined && hours.to! < toMs ? hours.to! : null;
    if (fromHour === null && toHour === null) return hours;
    const rows = await this.db.query(
      `SELECT (SELECT epoch_ms(min(first_ts)) FROM session_hours WHERE tenant_seq = $1 AND hour = epoch_ms($2::BIGINT)) AS first_ms,
              (SELECT epoch_ms(max(last_ts)) FROM session_hours WHERE tenant_seq = $1 AND hour = epoch_ms($3::BIGINT)) AS last_ms`,
      [filter.tenantSeq, fromHour ?? 0, toHour ?? 0],
    );
    const firstMs = rows[0]?.first_ms ?? null;
    const lastMs = rows[0]?.last_ms ?? null;
    if (fromHour !== null && (firstMs === null || Number(firstMs) >= fromMs!)) hours.from = fromHour;
    if (toHour !== null && (lastMs === null || Number(lastMs) < toMs!)) hours.to = toHour + HOUR_MS;
    return hours;
  }

  async viewerSeries(filter: AnalyticsFilter): Promise<ViewerSeries> {
    const hours = await this.wholeHours(filter);
    const p = new Params();
    const partials = hourPartials(SESSION_HOURS, filter, hours, p);
    const bucket = `${p.add(VIEWER_MINUTE_MS)}::BIGINT`;
    // A session lasts from its first to its last event (joined → left, or last sign of life); it
    // counts in every minute from the one it starts in to the one it ends in: +1 there, −1 after.
    const rows = await this.db.queryTenantEvents(filter.tenantSeq, 
      `WITH ${partials}, ${aloneAndGrouped(SESSION_HOURS)},
       sessions AS (
         SELECT epoch_ms(first_ts) // ${bucket} * ${bucket} AS first_bucket, epoch_ms(last_ts) // ${bucket} * ${bucket} AS last_bucket,
                joined, viewer_key AS viewer
         FROM alone
         UNION ALL
         SELECT epoch_ms(min(first_ts)) // ${bucket} * ${bucket}, epoch_ms(max(last_ts)) // ${bucket} * ${bucket}, bool_or(joined), any_value(viewer_key)
         FROM grouped GROUP BY session_key),
       steps AS (
         SELECT step_at, sum(step) AS step FROM (
           SELECT first_bucket AS step_at, 1 AS step FROM sessions UNION ALL SELECT last_bucket + ${bucket}, -1 FROM sessions)
         GROUP BY step_at HAVING sum(step) <> 0)
       SELECT 'point' AS kind, step_at AS bucket_at, step AS concurrent, NULL AS viewers, NULL AS sessions FROM steps
       UNION ALL
       SELECT 'totals', NULL, NULL, count(DISTINCT viewer) FILTER (WHERE joined), count(*) FROM sessions
       ORDER BY kind, bucket_at`,
      p.values,
    );
    const steps = rows.filter((r) => r.kind === 'point').map((r) => ({ at: numberOrZero(r.bucket_at), change: numberOrZero(r.concurrent) }));
    const totals = rows.find((r) => r.kind === 'totals');
    return {
      steps,
      uniqueViewers: numberOrZero(totals?.viewers),
      sessions: numberOrZero(totals?.sessions),
    };
  }

  async engagement(filter: AnalyticsFilter): Promise<Engagement> {
    const hours = await this.wholeHours(filter);
    const p = new Params();
    const rows = await this.db.queryTenantEvents(filter.tenantSeq, 
      `WITH ${hourPartials(SESSION_HOURS, filter, hours, p)},
       viewers AS (SELECT bool_or(joined) AS joined, bool_or(engaged) AS engaged FROM partials GROUP BY viewer_key)
       SELECT count(*) FILTER (WHERE joined) AS joined, count(*) FILTER (WHERE joined AND engaged) AS engaged FROM viewers`,
      p.values,
    );
    return { joinedViewers: numberOrZero(rows[0]?.joined), engagedViewers: numberOrZero(rows[0]?.engaged) };
  }

  async pollResults(filter: AnalyticsFilter): Promise<PollResult[]> {
    const hours = await this.wholeHours(filter);
    const p = new Params();
    // The vote rule (docs/analytics.md): rows hold only votes that match a known poll; of those,
    // a vote counts when it is the first of its session and the first of its userId. "First" is
    // by time, then event id; an event id names one vote, so a session's first vote counts when
    // its id is also that of its userId's first vote on the poll (voters by a 64-bit hash of
    // poll and userId, as the session's votes are by `vote_key`). Grouping rather than two
    // window functions ranking every vote of the range (benchmarks.md, "Dashboard queries").
    // `arg_min_null`: the first vote's userId may be null (plain `arg_min` skips such rows).
    const rows = await this.db.queryTenantEvents(
      filter.tenantSeq,
      `WITH ${hourPartials(VOTE_HOURS, filter, hours, p)}, ${aloneAndGrouped(VOTE_HOURS)},
       session_firsts AS (
         SELECT poll_id, option_index, user_id, first_event_id AS won_id FROM alone
         UNION ALL SELECT arg_min(poll_id, first), arg_min(option_index, first), arg_min_null(user_id, first), arg_min(first_event_id, first)
         FROM (SELECT vote_key, poll_id, option_index, user_id, first_event_id, (first_ts, first_event_id) AS first FROM grouped) GROUP BY vote_key),
       voter_firsts AS (
         SELECT arg_min(first_event_id, (first_ts, first_event_id)) AS won_id FROM partials WHERE user_id IS NOT NULL GROUP BY hash(poll_id, user_id)),
       votes AS (
         SELECT poll_id, option_index FROM session_firsts WHERE user_id IS NULL
         UNION ALL SELECT poll_id, option_index FROM session_firsts WHERE user_id IS NOT NULL AND won_id IN (SELECT won_id FROM voter_firsts))
       SELECT poll_id, option_index, count(*) AS votes FROM votes GROUP BY ALL ORDER BY poll_id, option_index`,
      p.values,
    );
    const counted = new Map<string, Map<number, number>>();
    for (const row of rows) {
      const pollId = String(row.poll_id);
      if (!counted.has(pollId)) counted.set(pollId, new Map());
      counted.get(pollId)!.set(numberOrZero(row.option_index), numberOrZero(row.votes));
    }
    return this.withPollLabels(filter.tenantSeq, counted);
  }

  /**
   * Results with the polls' own question and labels, every option listed (0 when nobody chose
   * it); a poll deleted since is no longer one the service knows and is left out.
   */
  private async withPollLabels(tenantSeq: number, counted: Map<string, Map<number, number>>): Promise<PollResult[]> {
    if (!counted.size) return [];
    const overlays = await this.db.query(
      `SELECT id, broadcast_id, epoch_ms(created_at) AS created_ms, content FROM overlays WHERE tenant_seq = $1 AND type = 'poll' AND list_contains($2::VARCHAR[], id)`,
      [tenantSeq, listValue([...counted.keys()])],
    );
    const polls = new Map(overlays.map((row) => [String(row.id), row]));
    const results = [...counted].flatMap(([pollId, votes]): PollResult[] => {
      const overlay = polls.get(pollId);
      if (!overlay) return [];
      const content = JSON.parse(String(overlay.content)) as { question: string; options: string[] };
      const options = content.options.map((option, optionIndex) => ({ optionIndex, option, votes: votes.get(optionIndex) ?? 0 }));
      return [{ pollId, broadcastId: String(overlay.broadcast_id), createdAt: numberOrZero(overlay.created_ms), question: content.question, totalVotes: options.reduce((sum, o) => sum + o.votes, 0), options }];
    });
    return results.sort(newestPollFirst);
  }

  async sponsorPerformance(filter: AnalyticsFilter): Promise<SponsorRow[]> {
    const hours = await this.wholeHours(filter);
    const p = new Params();
    const rows: Row[] = await this.db.queryTenantEvents(filter.tenantSeq, 
      `WITH ${hourPartials(SPONSOR_HOURS, filter, hours, p, true)}, ${aloneAndGrouped(SPONSOR_HOURS)},
       ${eventRows('reports', 'order_reports', filter, p, true)},
       orders AS (
         SELECT sponsor_id AS sponsor, broadcast_id, session_key, total, currency
         FROM reports WHERE sponsor_id IS NOT NULL
         QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY ts, event_id) = 1),
       moments AS NOT MATERIALIZED (SELECT sponsor_id AS sponsor, broadcast_id, session_key, impressions, taps FROM partials),
       counts AS (SELECT sponsor, broadcast_id, sum(impressions) AS impressions, sum(taps) AS taps FROM moments GROUP BY ALL),
       exposed AS (
         SELECT sponsor, broadcast_id, sum(sessions) AS sessions FROM (
           SELECT sponsor_id AS sponsor, broadcast_id, count(*) AS sessions FROM alone WHERE impressions > 0 GROUP BY ALL
           UNION ALL
           SELECT sponsor_id, broadcast_id, count(DISTINCT exposure_key) FROM grouped WHERE impressions > 0 GROUP BY ALL)
         GROUP BY ALL),
       pairs AS (SELECT sponsor, broadcast_id FROM counts UNION SELECT sponsor, broadcast_id FROM orders),
       converted AS (
         SELECT o.sponsor, o.broadcast_id, count(DISTINCT o.session_key) AS sessions
         FROM orders o SEMI JOIN (SELECT * FROM moments WHERE impressions > 0) m USING (sponsor, broadcast_id, session_key)
         GROUP BY ALL),
       revenue AS (
         SELECT sponsor, broadcast_id, list({'currency': currency, 'amount': amount} ORDER BY currency) AS revenue
         FROM (SELECT sponsor, broadcast_id, currency, sum(total) AS amount FROM orders GROUP BY ALL) GROUP BY ALL)
       SELECT p.sponsor, p.broadcast_id, coalesce(c.impressions, 0) AS impressions, coalesce(c.taps, 0) AS taps,
              coalesce(x.sessions, 0) AS exposed, coalesce(v.sessions, 0) AS converted, r.revenue
       FROM pairs p
       LEFT JOIN counts c USING (sponsor, broadcast_id)
       LEFT JOIN exposed x USING (sponsor, broadcast_id)
       LEFT JOIN converted v USING (sponsor, broadcast_id)
       LEFT JOIN revenue r USING (sponsor, broadcast_id)
       WHERE p.sponsor IS NOT NULL
       ORDER BY p.sponsor, p.broadcast_id`,
      p.values,
    );
    return rows.map((row) => ({
      sponsorId: String(row.sponsor),
      broadcastId: String(row.broadcast_id),
      impressions: numberOrZero(row.impressions),
      taps: numberOrZero(row.taps),
      sessionsWithImpression: numberOrZero(row.exposed),
      convertedSessions: numberOrZero(row.converted),
      revenue: ((row.revenue as Array<{ currency: string; amount: number }> | null) ?? []).map((r) => ({ currency: String(r.currency), amount: round2(numberOrZero(r.amount)) })),
    }));
  }

  async revenue(filter: AnalyticsFilter): Promise<RevenueRow[]> {
    await this.db.rollups.settled();
    const p = new Params();
    // An order reported twice counts once: its first report.
    const rows = await this.db.queryTenantEvents(filter.tenantSeq, 
      `WITH ${eventRows('reports', 'order_reports', filter, p, true)},
       orders AS (
         SELECT total, currency, item_count FROM reports WHERE order_id IS NOT NULL
         QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY ts, event_id) = 1)
       SELECT currency, count(*) AS orders, sum(total) AS gross, sum(item_count) AS items FROM orders GROUP BY currency ORDER BY currency`,
      p.values,
    );
    return rows.map((row) => ({ currency: String(row.currency), orders: numberOrZero(row.orders), gross: round2(numberOrZero(row.gross)), items: numberOrZero(row.items) }));
  }

  async contestEntries(filter: AnalyticsFilter): Promise<ContestRow[]> {
    await this.db.rollups.settled();
    const p = new Params();
    const rows = await this.db.queryTenantEvents(
      filter.tenantSeq,
      `WITH ${eventRows('entered', 'contest_entries', filter, p, false)}
       SELECT contest_id, count(DISTINCT event_id) AS entries, count(DISTINCT viewer_key) AS entrants
       FROM entered GROUP BY contest_id ORDER BY entries DESC, contest_id`,
      p.values,
    );
    return rows.map((row) => ({ contestId: String(row.contest_id), entries: numberOrZero(row.entries), entrants: numberOrZero(row.entrants) }));
  }

  async countries(filter: AnalyticsFilter): Promise<string[]> {
    // Every event has its session's row in `session_hours`, with the event's country.
    const anyCountry = { ...filter, country: undefined };
    const hours = await this.wholeHours(filter);
    const p = new Params();
    const rows = await this.db.queryTenantEvents(
      filter.tenantSeq,
      `WITH ${hourPartials(SESSION_HOURS, anyCountry, hours, p)}
       SELECT DISTINCT country FROM partials WHERE country IS NOT NULL AND country <> '' ORDER BY country`,
      p.values,
    );
    return rows.map((row) => String(row.country));
  }

  async revenueMinutes(filter: AnalyticsFilter): Promise<RevenueMinute[]> {
    await this.db.rollups.settled();
    const p = new Params();
    const rows = await this.db.queryTenantEvents(
      filter.tenantSeq,
      `WITH ${eventRows('reports', 'order_reports', filter, p, true)},
       orders AS (
         SELECT ts, total, currency FROM reports WHERE order_id IS NOT NULL
         QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY ts, event_id) = 1)
       SELECT epoch_ms(ts) // 60000 * 60000 AS minute_ms, currency, count(*) AS orders, sum(total) AS gross
       FROM orders GROUP BY ALL ORDER BY minute_ms, currency`,
      p.values,
    );
    return rows.map((row) => ({ at: numberOrZero(row.minute_ms), currency: String(row.currency), orders: numberOrZero(row.orders), gross: round2(numberOrZero(row.gross)) }));
  }

  async funnel(filter: AnalyticsFilter): Promise<FunnelCounts> {
    const hours = await this.wholeHours(filter);
    const p = new Params();
    // Each step counts the sessions that reached it after reaching the step before.
    const rows = await this.db.queryTenantEvents(filter.tenantSeq, 
      `WITH ${hourPartials(VIEW_HOURS, filter, hours, p, true)}, ${aloneAndGrouped(VIEW_HOURS)},
       ${eventRows('e', 'funnel_steps', filter, p, true)},
       s1 AS (SELECT session_key, first_ts AS t FROM alone UNION ALL SELECT session_key, min(first_ts) FROM grouped GROUP BY 1),
       s2 AS (SELECT e.session_key, min(e.ts) AS t FROM e JOIN s1 USING (session_key) WHERE e.event = 'cart.item_added' AND e.ts >= s1.t GROUP BY 1),
       s3 AS (SELECT e.session_key, min(e.ts) AS t FROM e JOIN s2 USING (session_key) WHERE e.event = 'checkout.started' AND e.ts >= s2.t GROUP BY 1),
       s4 AS (SELECT e.session_key, min(e.ts) AS t FROM e JOIN s3 USING (session_key) WHERE e.event = 'checkout.completed' AND e.ts >= s3.t GROUP BY 1)
       SELECT (SELECT count(*) FROM s1) AS a, (SELECT count(*) FROM s2) AS b, (SELECT count(*) FROM s3) AS c, (SELECT count(*) FROM s4) AS d`,
      p.values,
    );
    const row = rows[0];
    return { productViewed: numberOrZero(row?.a), cartItemAdded: numberOrZero(row?.b), checkoutStarted: numberOrZero(row?.c), checkoutCompleted: numberOrZero(row?.d) };
  }

  async compact(): Promise<void> {
    // Only rollup tables: beside the commits, in turn with the derivation of the rollups.
    await this.db.sideWrite((connection) => compactRollups(connection));
  }

  /**
   * Derives the votes already stored on the tenant's polls `pollIds` again, against the polls as
   * this file holds them now (see `deriveVotesAgain`): for a copy of a poll that landed after
   * some of its votes.
   */
  async votesOfPollsCopied(tenantSeq: number, pollIds: readonly string[]): Promise<void> {
    if (!pollIds.length) return;
    await this.db.rollups.transaction((connection) => deriveVotesAgain(connection, tenantSeq, pollIds));
  }
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
