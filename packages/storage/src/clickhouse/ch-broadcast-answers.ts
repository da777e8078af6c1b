import type { AnalyticsFilter } from '../analytics-store';
import { BROADCAST_HOURS_TABLE, BROADCAST_POLL_VOTES_TABLE } from './ch-broadcast-tables';
import { chNumber, serverSecond, type ChDatabase } from './ch-database';
import { EVENT_HOUR } from './ch-rollups';
import { derivedRunsCondition, type RangeHours } from './ch-rollup-reads';
import { votesCounted } from './ch-vote-rule';
import { roomFor } from './query-size-settings';
import { sqlInteger, sqlList, sqlString } from './sql-literal';

/**
 * Answers kept per broadcast, so that a panel over a range holding whole broadcasts reads a few
 * rows per broadcast instead of grouping every row of its hours (docs/analytics.md).
 *
 * `broadcast_hours` lists, per derivation (ch-rollup-deriver.ts), the broadcasts that have
 * events in each hour it derives. A broadcast's **signature** is the sorted list of the
 * (hour, derivation) pairs that hold its rows, each hour's newest listed derivation: the exact
 * rows an answer over the whole broadcast is made from. Answers are computed after hours are
 * derived (`answerBroadcasts`) and stored with the signature they were made from; a read uses an
 * answer only when the broadcast's pairs among the range's derived hours are exactly that
 * signature (the range holds the whole broadcast, every hour of it derived as the answer saw
 * it). Anything else (a range cutting the broadcast, an hour stored into or derived again
 * since, an answer not made yet) is read from the rows as before: an answer is never wrong,
 * at worst unused.
 */
/**
 * Broadcasts spanning more hours than this get no answer (a channel that never ends: every new
 * hour would mean an answer over all its rows again, and ranges rarely hold it whole).
 */
export const ANSWERED_BROADCAST_MAX_HOURS = 72;
/** Broadcasts answered per statement, and statements per run at most. */
const BROADCASTS_PER_ANSWER = 100;
const ANSWERS_PER_RUN = 4;
/** The poll id of the row that records an answer made (a broadcast without votes has no other). */
const ANSWERED = '';
/** The broadcast id of the rows that record a derivation's broadcasts as recorded (ids are never empty). */
const RECORDED = '';

/**
 * The broadcasts with events in `range` (a condition on `events`) of the tenant's `hours`, as the
 * derivation `derivation` begun at `startedAt` sees them, and for each hour a row with broadcast
 * `RECORDED` saying that they were recorded (a derivation of an earlier version, beside this one
 * in a rolling upgrade, records none: a read cannot know which broadcasts its hours hold).
 */
export function broadcastHoursSql(tenantSeq: number, hours: readonly number[], range: string, startedAt: number, derivation: number): string {
  const made = `toUInt32(${sqlInteger(startedAt)}) AS derived_at, toUInt64(${sqlInteger(derivation)}) AS derivation, toUInt32(${sqlInteger(tenantSeq)}) AS tenant_seq`;
  return `INSERT INTO ${BROADCAST_HOURS_TABLE} (derived_at, derivation, tenant_seq, hour, broadcast_id)
    SELECT DISTINCT ${made}, toInt64(${EVENT_HOUR}) AS hour, broadcast_id FROM events WHERE ${range}
    UNION ALL SELECT ${made}, toInt64(arrayJoin([${hours.map(sqlInteger).join(', ')}])) AS hour, ${sqlString(RECORDED)} AS broadcast_id`;
}

/** A broadcast's pairs (`hour`, `derivation` of the rows grouped) as one string, the same for the same pairs. */
const SIGNATURE = `arrayStringConcat(arraySort(groupArray(concat(toString(hour), '/', toString(derivation)))), ',')`;

/** Each hour's newest listed derivation (as `rangeHours` reads it). */
const NEWEST = 'SELECT tenant_seq, hour, argMax(derivation, derived_at) FROM rollup_versions GROUP BY tenant_seq, hour';

interface Unanswered {
  tenant_seq: string;
  broadcast_id: string;
  signature: string;
}

/**
 * Makes the answers of broadcasts whose current signature has none yet (hours derived since,
 * a new broadcast, data older than the answers), a bounded number per run. Returns how many.
 */
export async function answerBroadcasts(db: ChDatabase): Promise<number> {
  const unanswered = await db.query<Unanswered>(
    `SELECT tenant_seq, broadcast_id, signature FROM (
       SELECT tenant_seq, broadcast_id, ${SIGNATURE} AS signature, count() AS hours FROM (
         SELECT DISTINCT tenant_seq, broadcast_id, hour, derivation FROM ${BROADCAST_HOURS_TABLE}
         WHERE broadcast_id != ${sqlString(RECORDED)} AND (tenant_seq, hour, derivation) IN (${NEWEST}))
       GROUP BY tenant_seq, broadcast_id)
     WHERE hours <= ${ANSWERED_BROADCAST_MAX_HOURS}
       AND (tenant_seq, broadcast_id, signature) NOT IN (SELECT tenant_seq, broadcast_id, signature FROM ${BROADCAST_POLL_VOTES_TABLE} WHERE poll_id = ${sqlString(ANSWERED)})
     ORDER BY tenant_seq, broadcast_id
     LIMIT ${BROADCASTS_PER_ANSWER * ANSWERS_PER_RUN}`,
  );
  const batches = new Map<number, Unanswered[][]>();
  for (const row of unanswered) {
    const tenant = chNumber(row.tenant_seq);
    const list = batches.get(tenant) ?? [[]];
    if (list[list.length - 1]!.length === BROADCASTS_PER_ANSWER) list.push([]);
    list[list.length - 1]!.push(row);
    batches.set(tenant, list);
  }
  for (const [tenantSeq, lists] of batches) for (const list of lists) await answer(db, tenantSeq, list);
  return unanswered.length;
}

/** The answers of one tenant's broadcasts, each from the rows of its signature's pairs. */
async function answer(db: ChDatabase, tenantSeq: number, broadcasts: Unanswered[]): Promise<void> {
  const computedAt = await serverSecond(db);
  const pairs = broadcasts.flatMap((b) =>
    b.signature.split(',').map((pair) => {
      const [hour, derivation] = pair.split('/');
      return `(${sqlString(b.broadcast_id)}, ${sqlInteger(Number(hour))}, ${sqlInteger(Number(derivation))})`;
    }),
  );
  const ids = `[${broadcasts.map((b) => sqlString(b.broadcast_id)).join(', ')}]`;
  const signatures = `[${broadcasts.map((b) => sqlString(b.signature)).join(', ')}]`;
  const votes = `(SELECT * FROM vote_hours WHERE tenant_seq = ${sqlInteger(tenantSeq)} AND (broadcast_id, hour, derivation) IN (${pairs.join(', ')}))`;
  const answers = `INSERT INTO ${BROADCAST_POLL_VOTES_TABLE} (tenant_seq, broadcast_id, signature, computed_at, poll_id, option_index, votes)
    SELECT ${sqlInteger(tenantSeq)}, broadcast_id, transform(broadcast_id, ${ids}, ${signatures}, ''), toUInt32(${sqlInteger(computedAt)}), poll_id, option_index, votes
    FROM (${votesCounted(votes, 'broadcast_id')})`;
  await db.command(answers, roomFor(answers));
  // Then the record that the answers are made (one statement: the rows above are all there or none).
  const made = `INSERT INTO ${BROADCAST_POLL_VOTES_TABLE} (tenant_seq, broadcast_id, signature, computed_at, poll_id, option_index, votes) VALUES ${broadcasts
    .map((b) => `(${sqlInteger(tenantSeq)}, ${sqlString(b.broadcast_id)}, ${sqlString(b.signature)}, ${sqlInteger(computedAt)}, ${sqlString(ANSWERED)}, -1, 0)`)
    .join(', ')}`;
  await db.command(made, roomFor(made));
}

export interface AnsweredPolls {
  /** Per poll and option, its counted votes. */
  votes: Array<{ poll_id: string; option_index: string; votes: string }>;
  /** The broadcasts answered: every vote of theirs in the range's derived hours is in `votes`, bar those of the polls read from the events. */
  broadcasts: string[];
  /** Whether the range's derived hours hold votes of other broadcasts (false: none but those of the polls read from the events are left to read). */
  othersLeft: boolean;
}

/**
 * The poll results answered ahead for the filter's range: the polls of broadcasts the range's
 * derived hours hold whole (see above), other than `pending` (polls with votes read from the
 * events, whose derived rows are read with them). Null when answers cannot serve: a country or
 * campaign narrows votes within a broadcast, or a derived hour of the range was derived by a
 * version that did not record its broadcasts.
 */
export async function answeredPollVotes(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours, pending: readonly string[]): Promise<AnsweredPolls | null> {
  if (filter.campaignId !== undefined || filter.country !== undefined) return null;
  if (!range.derived.length) return { votes: [], broadcasts: [], othersLeft: false };
  const tenant = `tenant_seq = ${sqlInteger(filter.tenantSeq)}`;
  const broadcast = filter.broadcastId === undefined ? '' : ` AND broadcast_id IN (${sqlString(filter.broadcastId)}, ${sqlString(RECORDED)})`;
  const inRange = `SELECT broadcast_id, ${SIGNATURE} AS signature FROM (
      SELECT DISTINCT broadcast_id, hour, derivation FROM ${BROADCAST_HOURS_TABLE} WHERE ${tenant}${broadcast} AND ${derivedRunsCondition(range)})
    GROUP BY broadcast_id`;
  const signatures = await db.query<{ broadcast_id: string; signature: string }>(inRange, roomFor(inRange));
  const recorded = signatures.find((row) => row.broadcast_id === RECORDED)?.signature.split(',').length ?? 0;
  if (recorded !== range.derivedHours) return null;
  const present = signatures.filter((row) => row.broadcast_id !== RECORDED);
  if (!present.length) return { votes: [], broadcasts: [], othersLeft: false };
  const notPending = pending.length ? ` AND (poll_id = ${sqlString(ANSWERED)} OR poll_id NOT IN ${sqlList(pending)})` : '';
  const sql = `SELECT broadcast_id, poll_id, option_index, any(votes) AS votes FROM ${BROADCAST_POLL_VOTES_TABLE}
    WHERE ${tenant}${notPending} AND (broadcast_id, signature) IN (${present.map((row) => `(${sqlString(row.broadcast_id)}, ${sqlString(row.signature)})`).join(', ')})
    GROUP BY broadcast_id, poll_id, option_index`;
  const rows = await db.query<{ broadcast_id: string; poll_id: string; option_index: string; votes: string }>(sql, roomFor(sql));
  const broadcasts = [...new Set(rows.filter((row) => row.poll_id === ANSWERED).map((row) => row.broadcast_id))];
  return {
    votes: rows.filter((row) => row.poll_id !== ANSWERED),
    broadcasts,
    othersLeft: broadcasts.length < present.length,
  };
}
