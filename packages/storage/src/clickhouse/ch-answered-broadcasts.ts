import type { AnalyticsFilter } from '../analytics-store';
import { RECORDED, SIGNATURE, type AnswerPanel } from './ch-broadcast-answers';
import { BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE, BROADCAST_HOURS_TABLE } from './ch-broadcast-tables';
import { chNumber, type ChDatabase } from './ch-database';
import { derivedRunsCondition, pendingTimesCondition, type RangeHours, type RowConditions } from './ch-rollup-reads';
import { SESSION_HOURS } from './ch-rollups';
import { roomFor } from './query-size-settings';
import { sqlInteger, sqlList, sqlString } from './sql-literal';

/** The broadcasts of a range whose answers serve it: each with the answer to read. */
export interface AnsweredBroadcasts {
  /** Broadcast id and answer id of each. */
  answers: Array<[string, number]>;
  /** Whether the range's derived hours hold rows of other broadcasts too. */
  othersLeft: boolean;
}

/**
 * The broadcasts whose answers serve the filter's range (ch-broadcast-answers.ts). Null when none can: a
 * country or campaign narrows rows within a broadcast, or a derived hour of the range was derived
 * by a version that did not record its broadcasts.
 */
export async function answeredBroadcasts(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours): Promise<AnsweredBroadcasts | null> {
  if (filter.campaignId !== undefined || filter.country !== undefined) return null;
  if (!range.derived.length) return { answers: [], othersLeft: false };
  const tenant = `tenant_seq = ${sqlInteger(filter.tenantSeq)}`;
  const broadcast = filter.broadcastId === undefined ? '' : ` AND broadcast_id IN (${sqlString(filter.broadcastId)}, ${sqlString(RECORDED)})`;
  const inRange = `SELECT broadcast_id, ${SIGNATURE} AS signature FROM (
      SELECT DISTINCT broadcast_id, hour, derivation FROM ${BROADCAST_HOURS_TABLE} WHERE ${tenant}${broadcast} AND ${derivedRunsCondition(range)})
    GROUP BY broadcast_id`;
  // Broadcasts with events in the times read from the events are read from their rows: as the
  // panels read those times (every event makes a session row), or from the events.
  const pendingSessions = range.pendingTables?.[SESSION_HOURS.table];
  const live = pendingSessions
    ? `SELECT DISTINCT broadcast_id FROM ${pendingSessions} WHERE ${tenant}${broadcast}`
    : `SELECT DISTINCT broadcast_id FROM events WHERE ${tenant}${broadcast} AND ${pendingTimesCondition(range)}`;
  const [signatures, pending] = await Promise.all([
    db.query<{ broadcast_id: string; signature: string }>(inRange, roomFor(inRange)),
    range.pending.length ? db.query<{ broadcast_id: string }>(live, roomFor(live)) : [],
  ]);
  const recorded = signatures.find((row) => row.broadcast_id === RECORDED)?.signature.split(',').length ?? 0;
  if (recorded !== range.derivedHours) return null;
  const present = signatures.filter((row) => row.broadcast_id !== RECORDED);
  const readLive = new Set(pending.map((row) => row.broadcast_id));
  const candidates = present.filter((row) => !readLive.has(row.broadcast_id));
  if (!candidates.length) return { answers: [], othersLeft: present.length > 0 };
  const sql = `SELECT broadcast_id, any(answer) AS answer FROM ${BROADCAST_ANSWERED_TABLE}
    WHERE ${tenant} AND (broadcast_id, signature) IN (${candidates.map((row) => `(${sqlString(row.broadcast_id)}, ${sqlString(row.signature)})`).join(', ')})
    GROUP BY broadcast_id`;
  const answers = (await db.query<{ broadcast_id: string; answer: string }>(sql, roomFor(sql))).map((row): [string, number] => [row.broadcast_id, chNumber(row.answer)]);
  return { answers, othersLeft: answers.length < present.length };
}

/** The rows `panel` keeps for the answered broadcasts, as a relation of (broadcast_id, text, key, number, count). */
export function answerRows(tenantSeq: number, answered: AnsweredBroadcasts | null, panel: AnswerPanel): string {
  if (!answered?.answers.length) return `(SELECT '' AS broadcast_id, '' AS text, toUInt64(0) AS key, toInt64(0) AS number, toInt64(0) AS count WHERE 0)`;
  return `(SELECT broadcast_id, text, key, number, count FROM ${BROADCAST_ANSWERS_TABLE} WHERE tenant_seq = ${sqlInteger(tenantSeq)} AND panel = ${sqlString(panel)}
    AND answer IN (${answered.answers.map(([, answer]) => sqlInteger(answer)).join(', ')}))`;
}

/**
 * The conditions on a rollup's rows that leave the answered broadcasts' out: on the rows of
 * derived hours (`0` when no other broadcast has any there), and on the events read on the spot
 * (an event of an answered broadcast stored since the answers were looked up is left to the
 * next read: the answer holds the broadcast as it was then).
 */
export function unansweredRows(answered: AnsweredBroadcasts | null): RowConditions {
  if (!answered?.answers.length) return {};
  const others = `broadcast_id NOT IN ${sqlList(answered.answers.map(([broadcast]) => broadcast))}`;
  return { stored: [answered.othersLeft ? others : '0'], pending: [others] };
}
