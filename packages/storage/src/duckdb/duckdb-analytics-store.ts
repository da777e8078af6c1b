import type { DuckDBValue } from '@duckdb/node-api';
import type {
  AnalyticsFilter,
  AnalyticsStore,
  Engagement,
  FunnelCounts,
  PollResult,
  RevenueRow,
  SponsorRow,
  ViewerSeries,
} from '../analytics-store';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { numberOrZero } from './row-values';

const VIEWER = 'coalesce(user_id, session_id)';
const ENGAGING_EVENTS = "('poll.voted', 'contest.entered', 'sponsor_moment.tapped', 'product.tapped')";
const EVENT_SPONSOR = "coalesce(sponsor_id, json_extract_string(data, '$.sponsorId'))";

/** `base`: the filtered events, as a CTE; values are bound parameters. */
function base(filter: AnalyticsFilter, values: DuckDBValue[], withSponsor: boolean): string {
  const param = (value: DuckDBValue) => {
    values.push(value);
    return `$${values.length}`;
  };
  const clauses = [`tenant_seq = ${param(filter.tenantSeq)}`];
  if (filter.campaignId !== undefined) clauses.push(`campaign_id = ${param(filter.campaignId)}`);
  if (filter.broadcastId !== undefined) clauses.push(`broadcast_id = ${param(filter.broadcastId)}`);
  if (filter.fromMs !== undefined) clauses.push(`ts >= epoch_ms(${param(filter.fromMs)}::BIGINT)`);
  if (filter.toMs !== undefined) clauses.push(`ts < epoch_ms(${param(filter.toMs)}::BIGINT)`);
  if (filter.country !== undefined) clauses.push(`country = ${param(filter.country)}`);
  if (withSponsor && filter.sponsorId !== undefined) clauses.push(`${EVENT_SPONSOR} = ${param(filter.sponsorId)}`);
  return `base AS (SELECT * FROM events WHERE ${clauses.join(' AND ')})`;
}


/** The dashboard's metrics (DESIGN section 7) in SQL over the embedded database. */
export class DuckDbAnalyticsStore implements AnalyticsStore {
  constructor(private readonly db: DuckDbDatabase) {}

  async viewerSeries(filter: AnalyticsFilter, bucketMs: number): Promise<ViewerSeries> {
    const values: DuckDBValue[] = [];
    const cte = base(filter, values, false);
    values.push(bucketMs);
    const bucket = `$${values.length}::BIGINT`;
    // A session lasts from its first to its last event (joined → left, or last sign of life).
    const rows = await this.db.query(
      `WITH ${cte},
       sessions AS (
         SELECT session_id, broadcast_id, epoch_ms(min(ts)) AS started, epoch_ms(max(ts)) AS ended,
                bool_or(event = 'broadcast.joined') AS joined, any_value(${VIEWER}) AS viewer
         FROM base GROUP BY session_id, broadcast_id),
       bounds AS (SELECT min(started) // ${bucket} * ${bucket} AS first, max(ended) // ${bucket} * ${bucket} AS last FROM sessions),
       buckets AS (SELECT unnest(range(first, last + 1, ${bucket})) AS bucket_at FROM bounds WHERE first IS NOT NULL),
       series AS (
         SELECT b.bucket_at, count(s.session_id) AS concurrent
         FROM buckets b LEFT JOIN sessions s ON s.started < b.bucket_at + ${bucket} AND s.ended >= b.bucket_at
         GROUP BY b.bucket_at)
       SELECT 'point' AS kind, bucket_at, concurrent, NULL AS viewers, NULL AS sessions FROM series
       UNION ALL
       SELECT 'totals', NULL, NULL, count(DISTINCT viewer) FILTER (WHERE joined), count(*) FROM sessions
       ORDER BY kind, bucket_at`,
      values,
    );
    const points = rows.filter((r) => r.kind === 'point').map((r) => ({ at: numberOrZero(r.bucket_at), concurrent: numberOrZero(r.concurrent) }));
    const totals = rows.find((r) => r.kind === 'totals');
    return {
      bucketMs,
      points,
      peak: points.reduce((max, p) => Math.max(max, p.concurrent), 0),
      uniqueViewers: numberOrZero(totals?.viewers),
      sessions: numberOrZero(totals?.sessions),
    };
  }

  async engagement(filter: AnalyticsFilter): Promise<Engagement> {
    const values: DuckDBValue[] = [];
    const rows = await this.db.query(
      `WITH ${base(filter, values, false)},
       joined AS (SELECT DISTINCT ${VIEWER} AS v FROM base WHERE event = 'broadcast.joined'),
       engaged AS (SELECT DISTINCT ${VIEWER} AS v FROM base WHERE event IN ${ENGAGING_EVENTS})
       SELECT (SELECT count(*) FROM joined) AS joined, (SELECT count(*) FROM joined JOIN engaged USING (v)) AS engaged`,
      values,
    );
    return { joinedViewers: numberOrZero(rows[0]?.joined), engagedViewers: numberOrZero(rows[0]?.engaged) };
  }

  async pollResults(filter: AnalyticsFilter): Promise<PollResult[]> {
    const values: DuckDBValue[] = [];
    // One vote per viewer per poll: the first one counts.
    const rows = await this.db.query(
      `WITH ${base(filter, values, false)},
       votes AS (
         SELECT json_extract_string(data, '$.pollId') AS poll_id, broadcast_id, json_extract_string(data, '$.questionText') AS question,
                TRY_CAST(json_extract(data, '$.optionIndex') AS INTEGER) AS option_index, json_extract_string(data, '$.optionSelected') AS option,
                ${VIEWER} AS v, ts, event_id
         FROM base WHERE event = 'poll.voted'
         QUALIFY row_number() OVER (PARTITION BY poll_id, ${VIEWER} ORDER BY ts, event_id) = 1)
       SELECT poll_id, broadcast_id, any_value(question) AS question, option_index, any_value(option) AS option, count(*) AS votes
       FROM votes GROUP BY poll_id, broadcast_id, option_index ORDER BY poll_id, option_index`,
      values,
    );
    const polls = new Map<string, PollResult>();
    for (const row of rows) {
      const pollId = String(row.poll_id);
      let poll = polls.get(pollId);
      if (!poll) polls.set(pollId, (poll = { pollId, broadcastId: String(row.broadcast_id), question: String(row.question ?? ''), totalVotes: 0, options: [] }));
      poll.options.push({ optionIndex: numberOrZero(row.option_index), option: String(row.option ?? ''), votes: numberOrZero(row.votes) });
      poll.totalVotes += numberOrZero(row.votes);
    }
    return [...polls.values()];
  }

  async sponsorPerformance(filter: AnalyticsFilter): Promise<SponsorRow[]> {
    const values: DuckDBValue[] = [];
    const rows: Row[] = await this.db.query(
      `WITH ${base(filter, values, true)},
       moments AS (
         SELECT json_extract_string(data, '$.sponsorId') AS sponsor, broadcast_id, event, session_id
         FROM base WHERE event IN ('sponsor_moment.viewed', 'sponsor_moment.tapped')),
       orders AS (
         SELECT sponsor_id AS sponsor, broadcast_id, session_id, order_id, total, json_extract_string(data, '$.currency') AS currency
         FROM base WHERE event = 'checkout.completed' AND sponsor_id IS NOT NULL
         QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY ts, event_id) = 1),
       exposure AS (SELECT DISTINCT sponsor, broadcast_id, session_id FROM moments WHERE event = 'sponsor_moment.viewed'),
       pairs AS (
         SELECT sponsor, broadcast_id FROM moments UNION SELECT sponsor, broadcast_id FROM orders),
       counts AS (
         SELECT sponsor, broadcast_id,
                count(*) FILTER (WHERE event = 'sponsor_moment.viewed') AS impressions,
                count(*) FILTER (WHERE event = 'sponsor_moment.tapped') AS taps
         FROM moments GROUP BY ALL),
       converted AS (
         SELECT e.sponsor, e.broadcast_id, count(DISTINCT e.session_id) AS sessions
         FROM exposure e JOIN orders o USING (sponsor, broadcast_id, session_id) GROUP BY ALL),
       exposed AS (SELECT sponsor, broadcast_id, count(*) AS sessions FROM exposure GROUP BY ALL),
       revenue AS (
         SELECT sponsor, broadcast_id, list({'currency': currency, 'amount': amount} ORDER BY currency) AS revenue
         FROM (SELECT sponsor, broadcast_id, coalesce(currency, '?') AS currency, sum(total) AS amount FROM orders GROUP BY ALL) GROUP BY ALL)
       SELECT p.sponsor, p.broadcast_id, coalesce(c.impressions, 0) AS impressions, coalesce(c.taps, 0) AS taps,
              coalesce(x.sessions, 0) AS exposed, coalesce(v.sessions, 0) AS converted, r.revenue
       FROM pairs p
       LEFT JOIN counts c USING (sponsor, broadcast_id)
       LEFT JOIN exposed x USING (sponsor, broadcast_id)
       LEFT JOIN converted v USING (sponsor, broadcast_id)
       LEFT JOIN revenue r USING (sponsor, broadcast_id)
       WHERE p.sponsor IS NOT NULL
       ORDER BY p.sponsor, p.broadcast_id`,
      values,
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
    const values: DuckDBValue[] = [];
    // An order reported twice counts once: its first report.
    const rows = await this.db.query(
      `WITH ${base(filter, values, true)},
       orders AS (
         SELECT order_id, total, coalesce(json_extract_string(data, '$.currency'), '?') AS currency,
                coalesce(list_sum(list_transform(from_json(items, '[{"quantity":"INTEGER"}]'), x -> x.quantity)), 0) AS item_count
         FROM base WHERE event = 'checkout.completed' AND order_id IS NOT NULL
         QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY ts, event_id) = 1)
       SELECT currency, count(*) AS orders, sum(total) AS gross, sum(item_count) AS items FROM orders GROUP BY currency ORDER BY currency`,
      values,
    );
    return rows.map((row) => ({ currency: String(row.currency), orders: numberOrZero(row.orders), gross: round2(numberOrZero(row.gross)), items: numberOrZero(row.items) }));
  }

  async funnel(filter: AnalyticsFilter): Promise<FunnelCounts> {
    const values: DuckDBValue[] = [];
    // Each step counts the sessions that reached it after reaching the step before.
    const rows = await this.db.query(
      `WITH ${base(filter, values, true)},
       e AS (SELECT session_id, event, ts FROM base WHERE event IN ('product.viewed', 'cart.item_added', 'checkout.started', 'checkout.completed')),
       s1 AS (SELECT session_id, min(ts) AS t FROM e WHERE event = 'product.viewed' GROUP BY 1),
       s2 AS (SELECT e.session_id, min(e.ts) AS t FROM e JOIN s1 USING (session_id) WHERE e.event = 'cart.item_added' AND e.ts >= s1.t GROUP BY 1),
       s3 AS (SELECT e.session_id, min(e.ts) AS t FROM e JOIN s2 USING (session_id) WHERE e.event = 'checkout.started' AND e.ts >= s2.t GROUP BY 1),
       s4 AS (SELECT e.session_id, min(e.ts) AS t FROM e JOIN s3 USING (session_id) WHERE e.event = 'checkout.completed' AND e.ts >= s3.t GROUP BY 1)
       SELECT (SELECT count(*) FROM s1) AS a, (SELECT count(*) FROM s2) AS b, (SELECT count(*) FROM s3) AS c, (SELECT count(*) FROM s4) AS d`,
      values,
    );
    const row = rows[0];
    return { productViewed: numberOrZero(row?.a), cartItemAdded: numberOrZero(row?.b), checkoutStarted: numberOrZero(row?.c), checkoutCompleted: numberOrZero(row?.d) };
  }
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
