import { CURRENT_SIGNATURES } from './ch-broadcast-answers';
import { BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE } from './ch-broadcast-tables';
import { chNumber, type ChDatabase } from './ch-database';
import { roomFor } from './query-size-settings';
import { sqlInteger } from './sql-literal';

export interface RetiredAnswers {
  /** Answers made before the cutoff from a signature that is no broadcast's any more. */
  retired: number;
  /** Rows of those answers, and rows of every answer. */
  rows: number;
  allRows: number;
  /** Whether their deletion was started (it runs in the background on the server). */
  deleting: boolean;
}

/**
 * Deletes the answers no read will use again: made more than `afterSeconds` before server
 * second `now` (a read looks its answers up just before it reads them) from a signature that is
 * no broadcast's any more (an hour of it derived again since: a newer answer replaces it, or the
 * broadcast outgrew the answered length). Once their rows are `shareToDelete` of the answers'
 * (or `rowsToDelete`), their rows go, then their records, by background deletions.
 */
export async function retireAnswers(db: ChDatabase, now: number, afterSeconds: number, shareToDelete: number, rowsToDelete: number): Promise<RetiredAnswers> {
  const old = await db.query<{ answer: string }>(
    `SELECT answer FROM ${BROADCAST_ANSWERED_TABLE}
     WHERE computed_at < ${sqlInteger(now - afterSeconds)} AND (tenant_seq, broadcast_id, signature) NOT IN (${CURRENT_SIGNATURES})`,
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
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} DELETE WHERE answer IN ${ids}`, roomFor(ids));
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERED_TABLE} DELETE WHERE answer IN ${ids}`, roomFor(ids));
  }
  return { retired: old.length, rows, allRows, deleting };
}
