import type { AnalyticsFilter, FunnelCounts } from '../analytics-store';
import { answerRows, unansweredRows, type AnsweredBroadcasts } from './ch-answered-broadcasts';
import { FUNNEL_COUNTS_KEPT } from './ch-broadcast-answers';
import { chNumber, type ChDatabase } from './ch-database';
import { funnelStages } from './ch-funnel-stages';
import { rollupRows, type RangeHours } from './ch-rollup-reads';
import { FUNNEL_HOURS } from './ch-rollups';
import { roomFor } from './query-size-settings';

interface StepCounts {
  a: string;
  b: string;
  c: string;
  d: string;
}

function counts(row: StepCounts | undefined): FunnelCounts {
  return { productViewed: chNumber(row?.a ?? 0), cartItemAdded: chNumber(row?.b ?? 0), checkoutStarted: chNumber(row?.c ?? 0), checkoutCompleted: chNumber(row?.d ?? 0) };
}

function plus(x: FunnelCounts, y: FunnelCounts, sign = 1): FunnelCounts {
  return {
    productViewed: x.productViewed + sign * y.productViewed,
    cartItemAdded: x.cartItemAdded + sign * y.cartItemAdded,
    checkoutStarted: x.checkoutStarted + sign * y.checkoutStarted,
    checkoutCompleted: x.checkoutCompleted + sign * y.checkoutCompleted,
  };
}

/** The sessions reaching each step, of the relation `sessions` (one row per session, s1–s4). */
async function stepCounts(db: ChDatabase, sessions: string): Promise<FunnelCounts> {
  const sql = `SELECT countIf(s1) AS a, countIf(s2) AS b, countIf(s3) AS c, countIf(s4) AS d FROM (${sessions})`;
  const [row] = await db.query<StepCounts>(sql, roomFor(sql));
  return counts(row);
}

const stages = (rows: string) => `SELECT s1, s2, s3, s4 FROM (${funnelStages(rows)})`;

/**
 * The funnel of the filter over its range, with the answers kept for the broadcasts `answered`
 * (null: none serves it). A session key is not a broadcast's: one with funnel rows in more than
 * one broadcast (kept as −1), or in one answered and in the rows read here, is counted from all
 * its rows.
 */
export async function funnel(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours, answered: AnsweredBroadcasts | null): Promise<FunnelCounts> {
  if (!answered?.answers.length) return stepCounts(db, stages(rollupRows(FUNNEL_HOURS, filter, range, true)));
  // Pending times derived in each statement (no table of the read's: refused) would be read at
  // different moments by the counts' statements: one statement reads them once.
  const pendingSnapshot = range.pending.length === 0 || range.pendingTables?.[FUNNEL_HOURS.table] !== undefined;
  return (pendingSnapshot ? await fromKeptCounts(db, filter, range, answered) : null) ?? fromKeptSessions(db, filter, range, answered);
}

/**
 * The kept sessions of the answered broadcasts, the other broadcasts' rows (on derived hours,
 * none when every broadcast there is answered; and in the pending times), the crossing session
 * keys (kept as crossing broadcasts, or in those rows) and the rows counted from the rows: the
 * others' and, when `withCrossing`, every row of the crossing sessions.
 */
function sessionParts(filter: AnalyticsFilter, range: RangeHours, answered: AnsweredBroadcasts, keptCrossing = true) {
  const kept = answerRows(filter.tenantSeq, answered, 'funnel_session');
  const others = unansweredRows(answered);
  // (The kept sessions crossing broadcasts are left out when the kept counts say there are none.)
  const rowKeys = `SELECT session_key AS key FROM ${rollupRows(FUNNEL_HOURS, filter, range, true, [], others)}`;
  const crossing = keptCrossing ? `(SELECT key FROM ${kept} WHERE number < 0 UNION ALL ${rowKeys})` : `(${rowKeys})`;
  const rows = (withCrossing: boolean) =>
    stages(rollupRows(FUNNEL_HOURS, filter, range, true, [], withCrossing ? { stored: [`(${others.stored![0]} OR session_key IN ${crossing})`], pending: others.pending } : others));
  return { kept, crossing, rows };
}

/**
 * From the counts kept per broadcast (a few rows each), the sessions read from rows (other
 * broadcasts', those of the pending times) and those whose key is in both: the kept sessions
 * are read only when rows are read or a kept session crosses broadcasts. Null when an answer
 * was made before answers kept their counts.
 */
async function fromKeptCounts(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours, answered: AnsweredBroadcasts): Promise<FunnelCounts | null> {
  const totals = answerRows(filter.tenantSeq, answered, 'funnel_count');
  // (Each count once: counts made for answers of an earlier version may be stored twice, ch-broadcast-answers.ts.)
  const keptSql = `SELECT uniqExactIf(broadcast_id, number = ${FUNNEL_COUNTS_KEPT}) AS marked, sumIf(count, number = -1) AS crossing,
      sumIf(count, number >= 1) AS a, sumIf(count, number >= 2) AS b, sumIf(count, number >= 3) AS c, sumIf(count, number >= 4) AS d
    FROM (SELECT broadcast_id, number, any(count) AS count FROM ${totals} GROUP BY broadcast_id, number)`;
  const [kept] = await db.query<StepCounts & { marked: string; crossing: string }>(keptSql, roomFor(keptSql));
  if (chNumber(kept?.marked ?? 0) !== answered.answers.length) return null;
  const keptCrossing = chNumber(kept?.crossing ?? 0) > 0;
  // Rows of other broadcasts are read (on the derived hours holding theirs, and in the pending
  // times) or not; when not, the kept sessions are read only if one of them crosses broadcasts.
  const rowsRead = answered.othersLeft || range.pending.length > 0;
  if (!rowsRead && !keptCrossing) return counts(kept);
  const { kept: sessions, crossing, rows } = sessionParts(filter, range, answered, keptCrossing);
  // The kept sessions counted from all their rows instead: their steps come off the kept counts.
  const overlapSql = `SELECT count() AS n, countIf(number >= 1) AS a, countIf(number >= 2) AS b, countIf(number >= 3) AS c, countIf(number >= 4) AS d
    FROM ${sessions} WHERE key IN ${crossing}`;
  const [overlap] = await db.query<StepCounts & { n: string }>(overlapSql, roomFor(overlapSql));
  const read = await stepCounts(db, rows(chNumber(overlap?.n ?? 0) > 0));
  return plus(plus(counts(kept), counts(overlap), -1), read);
}

/** From every kept session, in one statement (answers made before answers kept their counts, or pending times derived in the statement). */
function fromKeptSessions(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours, answered: AnsweredBroadcasts): Promise<FunnelCounts> {
  const { kept, crossing, rows } = sessionParts(filter, range, answered);
  return stepCounts(
    db,
    `SELECT toUInt8(number >= 1) AS s1, toUInt8(number >= 2) AS s2, toUInt8(number >= 3) AS s3, toUInt8(number >= 4) AS s4
      FROM ${kept} WHERE number >= 0 AND key NOT IN ${crossing}
      UNION ALL ${rows(true)}`,
  );
}
