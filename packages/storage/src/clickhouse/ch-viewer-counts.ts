import type { AnalyticsFilter } from '../analytics-store';
import { answerIds, answerRows, unansweredRows, type AnsweredBroadcasts } from './ch-answered-broadcasts';
import { FLAGGING_ANSWER_IDS, VIEWERS_FLAGGED, type AnswerPanel } from './ch-broadcast-answers';
import { BROADCAST_ANSWERS_TABLE } from './ch-broadcast-tables';
import { chNumber, type ChDatabase } from './ch-database';
import { rollupRows, type RangeHours } from './ch-rollup-reads';
import { SESSION_HOURS } from './ch-rollups';
import { sessionSpans } from './ch-session-spans';
import { roomFor } from './query-size-settings';
import { sqlInteger, sqlString } from './sql-literal';

/** The viewers of a filter's range, each counted once across broadcasts. */
export interface ViewerCounts {
  /** Viewers of the sessions that joined (the viewer series' unique viewers). */
  uniqueViewers: number;
  /** Viewers with a `broadcast.joined` (engagement's denominator). */
  joinedViewers: number;
  /** Of those, the viewers who engaged. */
  engagedViewers: number;
}

/**
 * The `joined_viewer` keys of the answers made before their `viewer` rows flagged the viewers of
 * joined sessions, as a relation of `key`, or null when there are none: answers with ids from
 * `FLAGGING_ANSWER_IDS` flag them, those below when their `sessions` row says so. The primary
 * key (tenant, panel, answer) finds the rows, the other answers' are not read.
 */
function keptOfUnflagged(tenantSeq: number, answered: AnsweredBroadcasts | null): string | null {
  const older = answered?.answers.filter(([, answer]) => answer < FLAGGING_ANSWER_IDS) ?? [];
  if (!older.length) return null;
  const of = (panel: AnswerPanel) => `${BROADCAST_ANSWERS_TABLE} WHERE tenant_seq = ${sqlInteger(tenantSeq)} AND panel = ${sqlString(panel)} AND answer IN ${answerIds(older)}`;
  return `(SELECT key FROM ${of('joined_viewer')} AND answer IN (SELECT answer FROM ${of('sessions')} AND number != ${VIEWERS_FLAGGED}))`;
}

/**
 * The viewer series' unique viewers and engagement's viewers in one grouping of the viewers:
 * per viewer, the bits of its rows together (1 joined, 2 engaged; 4 the viewer of a joined
 * session). The broadcasts answered (`answered`) give their kept `viewer` rows, which hold all
 * three bits, and, for answers made before those rows flagged the viewers of joined sessions,
 * their `joined_viewer` rows; the others give their `session_hours` rows and sessions.
 */
export async function viewerCounts(db: ChDatabase, filter: AnalyticsFilter, range: RangeHours, answered: AnsweredBroadcasts | null): Promise<ViewerCounts> {
  const rows = rollupRows(SESSION_HOURS, filter, range, false, [], unansweredRows(answered));
  const unflagged = keptOfUnflagged(filter.tenantSeq, answered);
  const viewerRows = [
    `SELECT viewer_key, toUInt8(bitOr(joined, bitShiftLeft(engaged, 1))) AS viewer_bits FROM ${rows}`,
    `SELECT viewer AS viewer_key, toUInt8(4) AS viewer_bits FROM ${sessionSpans(rows)} WHERE session_joined`,
    `SELECT key AS viewer_key, toUInt8(bitOr(number, if(count = 2, 4, 0))) AS viewer_bits FROM ${answerRows(filter.tenantSeq, answered, 'viewer')}`,
    ...(unflagged === null ? [] : [`SELECT key AS viewer_key, toUInt8(4) AS viewer_bits FROM ${unflagged}`]),
  ];
  const sql = `SELECT countIf(bitAnd(bits, 4) = 4) AS unique_viewers, countIf(bitAnd(bits, 1) = 1) AS joined_viewers, countIf(bitAnd(bits, 3) = 3) AS engaged_viewers
    FROM (
      SELECT groupBitOr(viewer_bits) AS bits FROM (
        ${viewerRows.join('\n        UNION ALL ')})
      GROUP BY viewer_key)`;
  const [row] = await db.query<{ unique_viewers: string; joined_viewers: string; engaged_viewers: string }>(sql, roomFor(sql));
  return { uniqueViewers: chNumber(row?.unique_viewers ?? 0), joinedViewers: chNumber(row?.joined_viewers ?? 0), engagedViewers: chNumber(row?.engaged_viewers ?? 0) };
}
