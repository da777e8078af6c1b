import { CURRENT_SIGNATURES } from './ch-broadcast-answers';
import { BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE } from './ch-broadcast-tables';
import { chNumber, type ChDatabase } from './ch-database';
import { roomFor } from './query-size-settings';
import { sqlInteger } from './sql-literal';

export interface RetiredAnswers {
  /** Answers no read will use again (see `retireAnswers`). */
  retired: number;
  /** Rows of those answers. */
  rows: number;
  /** Rows of every answer. */
  allRows: number;
  /** Whether their deletion was started (it runs in the background on the server). */
  deleting: boolean;
}

/** A signature's hours (its `hour/derivation` pairs' first halves). */
const SIGNATURE_HOURS = `arrayMap(pair -> toInt64(splitByChar('/', pair)[1]), splitByChar(',', signature))`;

/**
 * Deletes the answers no read will use again: made more than `afterSeconds` before server
 * second `now`, from a signature that is no broadcast's any more, and none of whose hours has a
 * derivation begun since the cutoff or two listed in its newest second (a read that took either
 * of two tied derivations, or that looked its answers up just before a newer derivation was
 * listed, may still use it). Once their rows are `shareToDelete` of the answers' (or
 * `rowsToDelete`), their records go (waited for: no read finds them after), then their rows.
 */
export async function retireAnswers(db: ChDatabase, now: number, afterSeconds: number, shareToDelete: number, rowsToDelete: number): Promise<RetiredAnswers> {
  const cutoff = sqlInteger(now - afterSeconds);
  const unsettledHours = `SELECT tenant_seq, hour FROM rollup_versions GROUP BY tenant_seq, hour HAVING max(derived_at) >= ${cutoff}
    UNION ALL SELECT tenant_seq, hour FROM (
      SELECT tenant_seq, hour, derived_at, uniqExact(derivation) AS derivations FROM rollup_versions GROUP BY tenant_seq, hour, derived_at)
    WHERE derivations > 1 AND (tenant_seq, hour, derived_at) IN (SELECT tenant_seq, hour, max(derived_at) FROM rollup_versions GROUP BY tenant_seq, hour)`;
  const old = await db.query<{ answer: string }>(
    `SELECT answer FROM ${BROADCAST_ANSWERED_TABLE}
     WHERE computed_at < ${cutoff} AND (tenant_seq, broadcast_id, signature) NOT IN (${CURRENT_SIGNATURES})
       AND answer NOT IN (
         SELECT answer FROM (SELECT answer, tenant_seq, arrayJoin(${SIGNATURE_HOURS}) AS hour FROM ${BROADCAST_ANSWERED_TABLE})
         WHERE (tenant_seq, hour) IN (${unsettledHours}))`,
  );
  if (!old.length) return { retired: 0, rows: 0, allRows: 0, deleting: false };
  const ids = `(${old.map((row) => sqlInteger(chNumber(row.answer))).join(', ')})`;
  const [counts] = await db.query<{ retired_rows: string; all_rows: string }>(
    `SELECT countIf(answer IN ${ids}) AS retired_rows, count() AS all_rows FROM ${BROADCAST_ANSWERS_TABLE}`,
    roomFor(ids),
  );
  const rows = chNumber(counts?.retired_rows ?? 0);
  const allRows = chNumber(counts?.all_rows ?? 0);
  const deleting = rows >= allRows * shareToDelete || rows >= rowsToDelete;
  if (deleting) {
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERED_TABLE} DELETE WHERE answer IN ${ids}`, roomFor(ids));
    await db.waitForMutations(BROADCAST_ANSWERED_TABLE);
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} DELETE WHERE answer IN ${ids}`, roomFor(ids));
  }
  return { retired: old.length, rows, allRows, deleting };
}

/**
 * Deletes at once the answers whose records match `where` (a condition on `broadcast_answered`:
 * the broadcasts of an erased user, signatures with hours the retention purged): their records,
 * then their rows, each waited for.
 */
export async function deleteAnswers(db: ChDatabase, where: string, mutationWaitMs?: number): Promise<void> {
  const sql = `SELECT answer FROM ${BROADCAST_ANSWERED_TABLE} WHERE ${where}`;
  const answers = await db.query<{ answer: string }>(sql, roomFor(sql));
  if (!answers.length) return;
  const ids = `(${answers.map((row) => sqlInteger(chNumber(row.answer))).join(', ')})`;
  for (const table of [BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE]) {
    await db.command(`ALTER TABLE ${table} DELETE WHERE answer IN ${ids}`, roomFor(ids));
    await db.waitForMutations(table, mutationWaitMs);
  }
}

/** A condition on `broadcast_answered`: the tenant's answers made from rows of hours before `cutoffMs`. */
export function answersBefore(tenantSeq: number, cutoffMs: number): string {
  return `tenant_seq = ${sqlInteger(tenantSeq)} AND arrayExists(hour -> hour < ${sqlInteger(cutoffMs)}, ${SIGNATURE_HOURS})`;
}
