import { randomInt } from 'node:crypto';
import { VIEWER_MINUTE_MS } from '../analytics-store';
import { BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE, BROADCAST_HOURS_TABLE } from './ch-broadcast-tables';
import { chNumber, serverSecond, type ChDatabase } from './ch-database';
import { funnelStages } from './ch-funnel-stages';
import { sessionSpans } from './ch-session-spans';
import { EVENT_HOUR, FUNNEL_HOURS, ORDER_HOURS, SESSION_HOURS, SPONSOR_HOURS } from './ch-rollups';
import { votesCounted } from './ch-vote-rule';
import { roomFor } from './query-size-settings';
import { sqlInteger, sqlString } from './sql-literal';

/**
 * Answers kept per broadcast, so that a panel over a range holding whole broadcasts reads a few
 * rows per broadcast instead of grouping every row of their hours (docs/analytics.md).
 *
 * `broadcast_hours` lists, per derivation (ch-rollup-deriver.ts), the broadcasts that have
 * events in each hour it derives. A broadcast's **signature** is the sorted list of the
 * (hour, derivation) pairs that hold its rows, each hour's newest listed derivation: the exact
 * rows an answer over the whole broadcast is made from. Compaction makes the answers of
 * broadcasts whose signature has none (`answerBroadcasts`) and stores them with it. A read uses
 * a broadcast's answer only when the broadcast's pairs among the range's derived hours are
 * exactly that signature and it has no event in the range's times read from the events (the
 * range holds the whole broadcast, every hour of it derived as the answer saw it); the rows of
 * the other broadcasts are read as before. An answer is never wrong, at worst unused.
 */

/**
 * Broadcasts spanning more hours than this get no answer (a channel that never ends: every new
 * hour would mean an answer over all its rows again, and ranges rarely hold it whole).
 */
export const ANSWERED_BROADCAST_MAX_HOURS = 72;
/** Broadcasts answered per batch (statements over their rows), and batches per run at most. */
const BROADCASTS_PER_ANSWER = 100;
const ANSWERS_PER_RUN = 4;
/** How many answer ids there are to draw from at random: from FLAGGING_ANSWER_IDS up, all below 2^49 (exact in JSON numbers and SQL literals). */
const ANSWER_ID_SPAN = 2 ** 48;
/**
 * Answers are made with ids from this up (below 2^49), and their `viewer` rows flag the viewers
 * of joined sessions: a read knows it from the id alone. Answers made before have ids below it;
 * their `sessions` row says whether they flag them (`VIEWERS_FLAGGED`).
 */
export const FLAGGING_ANSWER_IDS = 2 ** 48;
/** The `number` of the `sessions` row of an answer whose `viewer` rows flag the viewers of its joined sessions (read by ch-viewer-counts.ts). */
export const VIEWERS_FLAGGED = 1;
/** The `number` of the `funnel_count` row that marks an answer holding its counts (read by ch-funnel.ts). */
export const FUNNEL_COUNTS_KEPT = -2;
/** The broadcast id of the rows that record a derivation's broadcasts as recorded (ids are never empty). */
export const RECORDED = '';

/** What a panel keeps per broadcast: rows of `panel`, each with `text`, `key`, `number` and `count`. */
export type AnswerPanel =
  /** Per poll (`text`) and option (`number`), its counted votes. */
  | 'poll'
  /** Per minute (`number`), the change in concurrent viewers. */
  | 'step'
  /**
   * The broadcast's sessions (`count`); `number` VIEWERS_FLAGGED when its `viewer` rows say which
   * viewers are those of its joined sessions (0: an answer made before they did).
   */
  | 'sessions'
  /** The viewers (`key`) of the sessions that joined, each once (read for answers made before `viewer` rows flagged them). */
  | 'joined_viewer'
  /**
   * Per viewer (`key`) of its rows or of its joined sessions: `number` 1 when joined, +2 when
   * engaged; `count` 2 when the viewer of a joined session, else 1 (0 in answers made before).
   */
  | 'viewer'
  /** The countries (`text`) of its events. */
  | 'country'
  /** Per sponsor of a moment (`text`): `number` impressions, `count` taps, `key` sessions with an impression. */
  | 'moment'
  /** The exposures (`key`, as `exposure_key`) of its sponsored order reports that had an impression. */
  | 'exposed'
  /** Per session of its funnel rows (`key`, as `session_key`), the steps it reached there (`number`, 0–4; −1: it has funnel rows in another broadcast too). */
  | 'funnel_session'
  /**
   * Its `funnel_session` rows counted (`count`) per `number`, and one row of `number`
   * FUNNEL_COUNTS_KEPT saying that the answer has them (answers made before
   * they were kept have none).
   */
  | 'funnel_count';

/**
 * The broadcasts with events in `range` (a condition on `events`) of the tenant's `hours`, as the
 * derivation `derivation` begun at `startedAt` sees them, and for each hour a row with broadcast
 * `RECORDED` saying that they were recorded (a derivation of an earlier version, beside this one
 * in a rolling upgrade, records none: a read cannot know which broadcasts its hours hold).
 */
export function broadcastHoursSql(tenantSeq: number, hours: readonly number[], range: string, startedAt: number, derivation: number): string {
  // (No alias named as a column of events: an alias would stand for the column in the WHERE.)
  const made = `toUInt32(${sqlInteger(startedAt)}) AS derived_at, toUInt64(${sqlInteger(derivation)}) AS derivation`;
  return `INSERT INTO ${BROADCAST_HOURS_TABLE} (derived_at, derivation, tenant_seq, hour, broadcast_id)
    SELECT DISTINCT ${made}, toUInt32(tenant_seq), toInt64(${EVENT_HOUR}) AS hour, broadcast_id FROM events WHERE ${range}
    UNION ALL SELECT ${made}, toUInt32(${sqlInteger(tenantSeq)}), toInt64(arrayJoin([${hours.map(sqlInteger).join(', ')}])) AS hour, ${sqlString(RECORDED)}`;
}

/** A broadcast's pairs (`hour`, `derivation` of the rows grouped) as one string, the same for the same pairs. */
export const SIGNATURE = `arrayStringConcat(arraySort(groupArray(concat(toString(hour), '/', toString(derivation)))), ',')`;

/** Each hour's newest listed derivation (as `rangeHours` reads it). */
const NEWEST = 'SELECT tenant_seq, hour, argMax(derivation, derived_at) FROM rollup_versions GROUP BY tenant_seq, hour';

/** The current signature of every broadcast (as `answerBroadcasts` computes them), as a relation of (tenant_seq, broadcast_id, signature). */
export const CURRENT_SIGNATURES = `SELECT tenant_seq, broadcast_id, ${SIGNATURE} AS signature FROM (
    SELECT DISTINCT tenant_seq, broadcast_id, hour, derivation FROM ${BROADCAST_HOURS_TABLE}
    WHERE broadcast_id != ${sqlString(RECORDED)} AND (tenant_seq, hour, derivation) IN (${NEWEST}))
  GROUP BY tenant_seq, broadcast_id`;

interface Unanswered {
  tenant_seq: string;
  broadcast_id: string;
  signature: string;
}

/**
 * Makes the answers of broadcasts whose current signature has none yet (hours derived since,
 * a new broadcast, data older than the answers), and counts the funnel sessions of answers made
 * before their counts were kept, a bounded number of each per run. Returns how many answers it
 * made or counted.
 */
export async function answerBroadcasts(db: ChDatabase): Promise<number> {
  const unanswered = await db.query<Unanswered>(
    `SELECT tenant_seq, broadcast_id, signature FROM (${CURRENT_SIGNATURES})
     WHERE length(splitByChar(',', signature)) <= ${ANSWERED_BROADCAST_MAX_HOURS}
       AND (tenant_seq, broadcast_id, signature) NOT IN (SELECT tenant_seq, broadcast_id, signature FROM ${BROADCAST_ANSWERED_TABLE})
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
  return unanswered.length + (await countFunnels(db));
}

/**
 * Stores the `funnel_count` rows of the answers `ids` (their kept funnel sessions counted per
 * steps reached), then each answer's mark, from `made`: a SELECT of (tenant_seq, answer,
 * broadcast_id) giving every one of them. The mark goes in last: an answer with it has all its
 * counts.
 */
async function storeFunnelCounts(db: ChDatabase, ids: number[], made: string): Promise<void> {
  const columns = '(tenant_seq, panel, answer, broadcast_id, text, key, number, count)';
  const counts = `INSERT INTO ${BROADCAST_ANSWERS_TABLE} ${columns}
    SELECT tenant_seq, 'funnel_count', answer, broadcast_id, '', toUInt64(0), number, toInt64(count()) FROM ${BROADCAST_ANSWERS_TABLE}
    WHERE panel = 'funnel_session' AND answer IN (${ids.map(sqlInteger).join(', ')}) GROUP BY tenant_seq, answer, broadcast_id, number`;
  await db.command(counts, roomFor(counts));
  const marks = `INSERT INTO ${BROADCAST_ANSWERS_TABLE} ${columns}
    SELECT tenant_seq, 'funnel_count', answer, broadcast_id, '', toUInt64(0), toInt64(${FUNNEL_COUNTS_KEPT}), toInt64(0) FROM (${made})`;
  await db.command(marks, roomFor(marks));
}

/**
 * Counts the funnel sessions of answers made before answers kept their counts (a bounded number
 * per run); the funnel reads their kept sessions until then. Two nodes doing it at once, or a run
 * cut short before its marks, store the same counts twice, which the funnel reads once
 * (ch-funnel.ts). Returns how many answers it counted.
 */
async function countFunnels(db: ChDatabase): Promise<number> {
  // Only answers of current signatures: others are being retired (rows stored after their
  // deletion began would be left behind).
  const uncounted = await db.query<{ answer: string }>(
    `SELECT answer FROM ${BROADCAST_ANSWERED_TABLE}
     WHERE answer NOT IN (SELECT answer FROM ${BROADCAST_ANSWERS_TABLE} WHERE panel = 'funnel_count' AND number = ${FUNNEL_COUNTS_KEPT})
       AND (tenant_seq, broadcast_id, signature) IN (SELECT tenant_seq, broadcast_id, signature FROM (${CURRENT_SIGNATURES}))
     LIMIT ${BROADCASTS_PER_ANSWER * ANSWERS_PER_RUN}`,
  );
  if (!uncounted.length) return 0;
  const ids = uncounted.map((row) => chNumber(row.answer));
  await storeFunnelCounts(db, ids, `SELECT tenant_seq, answer, broadcast_id FROM ${BROADCAST_ANSWERED_TABLE} WHERE answer IN (${ids.map(sqlInteger).join(', ')})`);
  return ids.length;
}

const MINUTE = sqlInteger(VIEWER_MINUTE_MS);

/**
 * Each panel's rows of the broadcasts whose rollup rows `rows(table)` gives (the tenant's rows of
 * their signatures' pairs), as SELECTs of (broadcast_id, a_text, a_key, a_number, a_count); each is
 * what the panel's read computes from those rows (clickhouse-analytics-store.ts).
 */
function panelRows(tenantSeq: number, rows: (table: string) => string): Array<[AnswerPanel, string]> {
  const sessions = sessionSpans(rows(SESSION_HOURS.table), true);
  return [
    ['poll', `SELECT broadcast_id, poll_id AS a_text, toUInt64(0) AS a_key, option_index AS a_number, toInt64(votes) AS a_count FROM (${votesCounted(rows('vote_hours'), 'broadcast_id')})`],
    [
      'step',
      `SELECT broadcast_id, '' AS a_text, toUInt64(0) AS a_key, step.1 AS a_number, sum(step.2) AS a_count FROM ${sessions}
       ARRAY JOIN [(first_bucket, toInt64(1)), (last_bucket + ${MINUTE}, toInt64(-1))] AS step GROUP BY broadcast_id, a_number HAVING a_count != 0`,
    ],
    [
      'sessions',
      `SELECT broadcast_id, '' AS a_text, toUInt64(0) AS a_key, toInt64(${VIEWERS_FLAGGED}) AS a_number, toInt64(count()) AS a_count FROM ${sessions} GROUP BY broadcast_id`,
    ],
    ['joined_viewer', `SELECT DISTINCT broadcast_id, '' AS a_text, viewer AS a_key, toInt64(0) AS a_number, toInt64(0) AS a_count FROM ${sessions} WHERE session_joined`],
    [
      'viewer',
      // The viewers of the rows and those of the joined sessions (`joined_viewer`), each once.
      `SELECT broadcast_id, '' AS a_text, a_key, max(bits) AS a_number, toInt64(1) + max(of_joined) AS a_count FROM (
         SELECT broadcast_id, viewer_key AS a_key, toInt64(max(joined) + 2 * max(engaged)) AS bits, toInt64(0) AS of_joined
         FROM ${rows(SESSION_HOURS.table)} GROUP BY broadcast_id, viewer_key
         UNION ALL SELECT DISTINCT broadcast_id, viewer AS a_key, toInt64(0) AS bits, toInt64(1) AS of_joined FROM ${sessions} WHERE session_joined)
       GROUP BY broadcast_id, a_key`,
    ],
    [
      'moment',
      `SELECT broadcast_id, sponsor AS a_text, uniqExactIf(exposure_key, impressions > 0) AS a_key, toInt64(sum(impressions)) AS a_number,
         toInt64(sum(taps)) AS a_count
       FROM ${rows(SPONSOR_HOURS.table)} WHERE sponsor != '' GROUP BY broadcast_id, sponsor`,
    ],
    [
      'exposed',
      `SELECT DISTINCT broadcast_id, '' AS a_text, cityHash64(assumeNotNull(report_sponsor), broadcast_id, report_session) AS a_key, toInt64(0) AS a_number,
         toInt64(0) AS a_count
       FROM ${rows(ORDER_HOURS.table)} WHERE has_sponsor AND a_key IN (SELECT exposure_key FROM ${rows(SPONSOR_HOURS.table)} WHERE impressions > 0)`,
    ],
    [
      'funnel_session',
      // −1 for a session with funnel rows in another broadcast too (of any time, derived before or
      // since): a read counts it from all its rows.
      `SELECT broadcast_id, '' AS a_text, session_key AS a_key, if(crossing, toInt64(-1), toInt64(s1 + s2 + s3 + s4)) AS a_number, toInt64(0) AS a_count
       FROM (
         SELECT *, session_key IN (
           SELECT session_key FROM ${FUNNEL_HOURS.table} WHERE tenant_seq = ${sqlInteger(tenantSeq)}
             AND session_key IN (SELECT session_key FROM ${rows(FUNNEL_HOURS.table)})
           GROUP BY session_key HAVING uniqExact(broadcast_id) > 1) AS crossing
         FROM (${funnelStages(rows(FUNNEL_HOURS.table), 'broadcast_id')}))`,
    ],
    [
      'country',
      `SELECT DISTINCT broadcast_id, assumeNotNull(country) AS a_text, toUInt64(0) AS a_key, toInt64(0) AS a_number, toInt64(0) AS a_count
       FROM ${rows(SESSION_HOURS.table)} WHERE isNotNull(country) AND country != ''`,
    ],
  ];
}

/** The answers of one tenant's broadcasts, each from the rows of its signature's pairs. */
async function answer(db: ChDatabase, tenantSeq: number, broadcasts: Unanswered[]): Promise<void> {
  const computedAt = await serverSecond(db);
  const ids = broadcasts.map(() => FLAGGING_ANSWER_IDS + randomInt(1, ANSWER_ID_SPAN));
  const pairs = broadcasts.flatMap((b) =>
    b.signature.split(',').map((pair) => {
      const [hour, derivation] = pair.split('/');
      return `(${sqlString(b.broadcast_id)}, ${sqlInteger(Number(hour))}, ${sqlInteger(Number(derivation))})`;
    }),
  );
  const rows = (table: string) => `(SELECT * FROM ${table} WHERE tenant_seq = ${sqlInteger(tenantSeq)} AND (broadcast_id, hour, derivation) IN (${pairs.join(', ')}))`;
  const answerOf = `transform(broadcast_id, [${broadcasts.map((b) => sqlString(b.broadcast_id)).join(', ')}], [${ids.map(sqlInteger).join(', ')}], 0)`;
  for (const [panel, select] of panelRows(tenantSeq, rows)) {
    const sql = `INSERT INTO ${BROADCAST_ANSWERS_TABLE} (tenant_seq, panel, answer, broadcast_id, text, key, number, count)
      SELECT toUInt32(${sqlInteger(tenantSeq)}), ${sqlString(panel)}, toUInt64(${answerOf}), broadcast_id, a_text, a_key, a_number, a_count FROM (${select})`;
    await db.command(sql, roomFor(sql));
  }
  // The funnel's counts, from the sessions just kept.
  const answers = broadcasts.map((b, i) => `(${sqlInteger(ids[i]!)}, ${sqlString(b.broadcast_id)})`).join(', ');
  await storeFunnelCounts(db, ids, `SELECT toUInt32(${sqlInteger(tenantSeq)}) AS tenant_seq, toUInt64(made.1) AS answer, made.2 AS broadcast_id FROM (SELECT arrayJoin([${answers}]) AS made)`);
  // The record of the answers goes last: one cut short is never read.
  const made = `INSERT INTO ${BROADCAST_ANSWERED_TABLE} (tenant_seq, broadcast_id, signature, answer, computed_at) VALUES ${broadcasts
    .map((b, i) => `(${sqlInteger(tenantSeq)}, ${sqlString(b.broadcast_id)}, ${sqlString(b.signature)}, ${sqlInteger(ids[i]!)}, ${sqlInteger(computedAt)})`)
    .join(', ')}`;
  await db.command(made, roomFor(made));
}
