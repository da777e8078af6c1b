import type { AnalyticsFilter } from '../analytics-store';
import { RECORDED, SIGNATURE, type AnswerPanel } from './ch-broadcast-answers';
import { BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE, BROADCAST_HOURS_TABLE } from './ch-broadcast-tables';
import { chNumber, type ChDatabase } from './ch-database';
import { derivedRunsCondition, NO_ROW, pendingTimesCondition, type RangeHours, type RowConditions } from './ch-rollup-reads';
import { SESSION_HOURS } from './ch-rollups';
import { roomFor } from './query-size-settings';
import { sqlInteger, sqlList, sqlString } from './sql-literal';

/** The broadcasts of a range whose answers serve it: each with the answer to read. */
export interface AnsweredBroadcasts {
  /** Broadcast id and answer id of each. */
  answers: Array<[string, number]>;
  /** Whether the range's derived hours hold rows of other broadcasts too. */
  othersLeft: boolean;
  /** The derived hours holding rows of the other broadcasts (their rows are in no other). */
  otherHours: number[];
}

/** The broadcasts of a range's derived hours, each with its signature there and the answer made for it (null: none yet). */
export interface RangeBroadcasts {
  /** By broadcast id (`RECORDED`: the hours that recorded their broadcasts). */
  signatures: Map<string, { signature: string; answer: number | null }>;
}

/**
 * The broadcasts of the range's derived hours (`broadcastId` alone, when given) with their
 * signatures there and the answers made for those signatures, in one statement that needs only
 * the derived hours (it runs while the range's pending rows are derived).
 */
export async function rangeBroadcasts(db: ChDatabase, tenantSeq: number, broadcastId: string | undefined, range: RangeHours): Promise<RangeBroadcasts> {
  const signatures: RangeBroadcasts['signatures'] = new Map();
  if (!range.derived.length) return { signatures };
  const tenant = `tenant_seq = ${sqlInteger(tenantSeq)}`;
  const broadcast = broadcastId === undefined ? '' : ` AND broadcast_id IN (${sqlString(broadcastId)}, ${sqlString(RECORDED)})`;
  const inRange = `${BROADCAST_HOURS_TABLE} WHERE ${tenant}${broadcast} AND ${derivedRunsCondition(range)}`;
  const sql = `SELECT broadcast_id, signature, answer, answered FROM (
      SELECT broadcast_id, ${SIGNATURE} AS signature FROM (SELECT DISTINCT broadcast_id, hour, derivation FROM ${inRange})
      GROUP BY broadcast_id) AS present
    ANY LEFT JOIN (
      SELECT broadcast_id, signature, any(answer) AS answer, toUInt8(1) AS answered FROM ${BROADCAST_ANSWERED_TABLE}
      WHERE ${tenant} AND broadcast_id IN (SELECT broadcast_id FROM ${inRange}) GROUP BY broadcast_id, signature) AS made
    USING (broadcast_id, signature)`;
  const rows = await db.query<{ broadcast_id: string; signature: string; answer: string; answered: number }>(sql, roomFor(sql));
  for (const row of rows) signatures.set(row.broadcast_id, { signature: row.signature, answer: chNumber(row.answered) === 1 ? chNumber(row.answer) : null });
  return { signatures };
}

/**
 * The broadcasts whose answers serve the filter's range (ch-broadcast-answers.ts), of those
 * `rangeBroadcasts` found. Null when none can: a country or campaign narrows rows within a
 * broadcast, or a derived hour of the range was derived by a version that did not record its
 * broadcasts.
 */
export async function answeredBroadcasts(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours, broadcasts: RangeBroadcasts): Promise<AnsweredBroadcasts | null> {
  if (filter.campaignId !== undefined || filter.country !== undefined) return null;
  if (!range.derived.length) return { answers: [], othersLeft: false, otherHours: [] };
  const recorded = broadcasts.signatures.get(RECORDED)?.signature.split(',').length ?? 0;
  if (recorded !== range.derivedHours) return null;
  // (`rangeBroadcasts` found those of the filter's broadcast only, when it has one.)
  const present = [...broadcasts.signatures].filter(([id]) => id !== RECORDED);
  if (!present.length) return { answers: [], othersLeft: false, otherHours: [] };
  // Broadcasts with events in the times read from the events are read from their rows: as the
  // panels read those times (every event makes a session row), or from the events.
  const tenant = `tenant_seq = ${sqlInteger(filter.tenantSeq)}`;
  const broadcast = filter.broadcastId === undefined ? '' : ` AND broadcast_id = ${sqlString(filter.broadcastId)}`;
  const pendingSessions = range.pendingTables?.[SESSION_HOURS.table];
  const live = pendingSessions
    ? `SELECT DISTINCT broadcast_id FROM ${pendingSessions} WHERE ${tenant}${broadcast}`
    : `SELECT DISTINCT broadcast_id FROM events WHERE ${tenant}${broadcast} AND ${pendingTimesCondition(range)}`;
  const readLive = new Set(range.pending.length ? (await db.query<{ broadcast_id: string }>(live, roomFor(live))).map((row) => row.broadcast_id) : []);
  const answers = present.filter(([id, { answer }]) => answer !== null && !readLive.has(id)).map(([id, { answer }]): [string, number] => [id, answer!]);
  const answeredIds = new Set(answers.map(([id]) => id));
  // A signature lists its broadcast's hours as hour/derivation.
  const otherHours = new Set(present.filter(([id]) => !answeredIds.has(id)).flatMap(([, { signature }]) => signature.split(',').map((pair) => Number(pair.split('/')[0]))));
  return { answers, othersLeft: answers.length < present.length, otherHours: [...otherHours].sort((a, b) => a - b) };
}

/** The ids of answers (at least one; broadcast id and answer id each) as an SQL list. */
export function answerIds(answers: AnsweredBroadcasts['answers']): string {
  return `(${answers.map(([, answer]) => sqlInteger(answer)).join(', ')})`;
}

/** The rows `panel` keeps for the answered broadcasts, as a relation of (broadcast_id, text, key, number, count). */
export function answerRows(tenantSeq: number, answered: AnsweredBroadcasts | null, panel: AnswerPanel): string {
  if (!answered?.answers.length) return `(SELECT '' AS broadcast_id, '' AS text, toUInt64(0) AS key, toInt64(0) AS number, toInt64(0) AS count WHERE 0)`;
  return `(SELECT broadcast_id, text, key, number, count FROM ${BROADCAST_ANSWERS_TABLE} WHERE tenant_seq = ${sqlInteger(tenantSeq)} AND panel = ${sqlString(panel)}
    AND answer IN ${answerIds(answered.answers)})`;
}

/**
 * The conditions on a rollup's rows that leave the answered broadcasts' out: on the rows of
 * derived hours (only the hours holding the others' rows; `NO_ROW` when no other broadcast has any
 * there), and on the events read on the spot
 * (an event of an answered broadcast stored since the answers were looked up is left to the
 * next read: the answer holds the broadcast as it was then).
 */
export function unansweredRows(answered: AnsweredBroadcasts | null): RowConditions {
  if (!answered?.answers.length) return {};
  const others = `broadcast_id NOT IN ${sqlList(answered.answers.map(([broadcast]) => broadcast))}`;
  // On derived hours, only those holding the others' rows are read (the primary key finds them).
  const stored = answered.othersLeft ? `(hour IN ${sqlList(answered.otherHours)} AND ${others})` : NO_ROW;
  return { stored: [stored], pending: [others] };
}
