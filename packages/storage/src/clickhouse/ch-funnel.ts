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
  return (await fromKeptCounts(db, filter, range, answered)) ?? fromKeptSessions(db, filter, range, answered);
}

/**
 * From the counts kept per broadcast (a few rows each), the sessions read from rows (other
 * broadcasts', those of the pending times) and those whose key is in both: the kept sessions
 * are read only when rows are read or a kept session crosses broadcasts. Null when an answer
 * was made before answers kept their counts.
 */
async function fromKeptCounts(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours, answered: AnsweredBroadcasts): Promise<FunnelCounts | null> {
  const totals = answerRows(filter.tenantSeq, answered, 'funnel_count');
  const keptSql = `SELECT uniqExactIf(broadcast_id, number = ${FUNNEL_COUNTS_KEPT}) AS marked, sumIf(count, number = -1) AS crossing,
      sumIf(count, number >= 1) AS a, sumIf(count, number >= 2) AS b, sumIf(count, number >= 3) AS c, sumIf(count, number >= 4) AS d
    FROM (SELECT broadcast_id, number, any(count) AS count FROM ${totals} GROUP BY broadcast_id, number)`;
  // (Each count once: counts made for answers of an earlier version may be stored twice, ch-broadcast-answers.ts.)
  const keptCounts = async () => (await db.query<StepCounts & { marked: string; crossing: string }>(keptSql, roomFor(keptSql)))[0];
  const sessions = answerRows(filter.tenantSeq, answered, 'funnel_session');
  const others = unansweredRows(answered);
  const crossing = `(SELECT key FROM ${sessions} WHERE number < 0 UNION ALL SELECT session_key AS key FROM ${rollupRows(FUNNEL_HOURS, filter, range, true, [], others)})`;
  // The kept sessions counted from all their rows instead: their steps come off the kept counts.
  const overlapSql = `SELECT count() AS n, countIf(number >= 1) AS a, countIf(number >= 2) AS b, countIf(number >= 3) AS c, countIf(number >= 4) AS d
    FROM ${sessions} WHERE key IN ${crossing}`;
  const keptOverlap = async () => (await db.query<StepCounts & { n: string }>(overlapSql, roomFor(overlapSql)))[0];
  // Rows of other broadcasts are read (on the derived hours holding theirs, and in the pending
  // times) or not; when not, the kept sessions are read only if one of them crosses broadcasts.
  const rowsRead = answered.othersLeft || range.pending.length > 0;
  let [kept, overlap] = rowsRead ? await Promise.all([keptCounts(), keptOverlap()]) : [await keptCounts(), undefined];
  if (chNumber(kept?.marked ?? 0) !== answered.answers.length) return null;
  if (!rowsRead) {
    if (chNumber(kept?.crossing ?? 0) === 0) return counts(kept);
    overlap = await keptOverlap();
  }
  const overlapping = chNumber(overlap?.n ?? 0) > 0;
  const rows = overlapping ? { stored: [`(${others.stored![0]} OR session_key IN ${crossing})`], pending: others.pending } : others;
  const read = await stepCounts(db, stages(rollupRows(FUNNEL_HOURS, filter, range, true, [], rows)));
  return plus(plus(counts(kept), counts(overlap), -1), read);
}

/** From every kept session (answers made before answers kept their counts). */
function fromKeptSessions(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours, answered: AnsweredBroadcasts): Promise<FunnelCounts> {
  const kept = answerRows(filter.tenantSeq, answered, 'funnel_session');
  // The other broadcasts' rows (on derived hours, none when every broadcast there is answered).
  const others = unansweredRows(answered);
  const unanswered = rollupRows(FUNNEL_HOURS, filter, range, true, [], others);
  const crossing = `(SELECT key FROM ${kept} WHERE number < 0 UNION ALL SELECT session_key AS key FROM ${unanswered})`;
  return stepCounts(
    db,
    `SELECT toUInt8(number >= 1) AS s1, toUInt8(number >= 2) AS s2, toUInt8(number >= 3) AS s3, toUInt8(number >= 4) AS s4
      FROM ${kept} WHERE number >= 0 AND key NOT IN ${crossing}
      UNION ALL ${stages(rollupRows(FUNNEL_HOURS, filter, range, true, [], { stored: [`(${others.stored![0]} OR session_key IN ${crossing})`], pending: others.pending }))}`,
  );
}
