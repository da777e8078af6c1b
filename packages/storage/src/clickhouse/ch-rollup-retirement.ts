import { chNumber, serverSecond, type ChDatabase } from './ch-database';
import { BROADCAST_HOURS_TABLE } from './ch-broadcast-tables';
import { CH_ROLLUPS } from './ch-rollups';
import { sqlInteger, sqlString } from './sql-literal';

/**
 * How long a node's claim on the hours it derives keeps the other nodes from deriving them, s.
 * A derivation still running after this long is never listed (ch-rollup-deriver.ts): its hours
 * are another node's to derive by then.
 */
export const CLAIM_SECONDS = 600;
/**
 * Rows of a derivation are retired once it began this long ago, s: twice a claim, so that a
 * derivation that could still be listed is never touched, and a reader that looked up an hour
 * just before its newer derivation was listed (at most a claim after it began) has long finished.
 */
export const RETIRE_AFTER_SECONDS = 2 * CLAIM_SECONDS;
/** A table's retired rows are deleted once they are this share of its rows… */
export const RETIRED_SHARE_TO_DELETE = 0.2;
/** …or this many, whichever comes first (a deletion rewrites the table's parts: not for a few rows). */
export const RETIRED_ROWS_TO_DELETE = 1_000_000;

/** The tables whose rows carry their derivation (`derivation`, `derived_at`, per `tenant_seq` and `hour`): the rollups and the broadcasts of each hour. */
export const RETIRED_TABLES: readonly string[] = [...CH_ROLLUPS.map((rollup) => rollup.table), BROADCAST_HOURS_TABLE];

export interface RetiredRows {
  table: string;
  /** Rows no reader will use again. */
  retired: number;
  /** Rows of the table. */
  rows: number;
  /** Whether their deletion was started (it runs in the background on the server). */
  deleting: boolean;
}

/**
 * The condition of rows no reader will use again, as of server second `now` (`afterSeconds`:
 * `RETIRE_AFTER_SECONDS`, shorter only in tests): rows of an hour
 * whose newest listed derivation began before the cutoff (or which has none), from a derivation
 * that began before it and is not among the hour's newest listed ones. Those are the derivations
 * a newer one replaced and those cut short (never listed). Rows of the newest derivation, of two
 * that share the newest second, and of any derivation that may still be running or read, stay.
 */
export function retiredRowsCondition(now: number, afterSeconds = RETIRE_AFTER_SECONDS): string {
  const cutoff = sqlInteger(now - afterSeconds);
  // A row carries the second its derivation began, as that derivation's line in rollup_versions
  // does. (No JOIN here: 18.16 cannot run a mutation whose subquery joins.)
  return `derived_at < ${cutoff}
    AND (tenant_seq, hour) NOT IN (SELECT tenant_seq, hour FROM rollup_versions GROUP BY tenant_seq, hour HAVING max(derived_at) >= ${cutoff})
    AND NOT ((tenant_seq, hour, derivation) IN (SELECT tenant_seq, hour, derivation FROM rollup_versions)
      AND (tenant_seq, hour, derived_at) IN (SELECT tenant_seq, hour, max(derived_at) FROM rollup_versions GROUP BY tenant_seq, hour))`;
}

/**
 * Deletes the rollup rows (and `broadcast_hours` rows) no reader will use again (see
 * `retiredRowsCondition`): without it,
 * every derivation of an hour after the first (an hour stored into again by late events, a
 * deletion or the retention purge) would leave the rows of the one before on disk for good.
 * A table's rows go once they are a large enough share of it, by a mutation the server runs in
 * the background; a table with a mutation still running is left for the next time (two nodes
 * may both get here).
 */
export async function retireRollupRows(db: ChDatabase, afterSeconds = RETIRE_AFTER_SECONDS): Promise<RetiredRows[]> {
  const condition = retiredRowsCondition(await serverSecond(db), afterSeconds);
  const results: RetiredRows[] = [];
  for (const table of RETIRED_TABLES) {
    const [counts] = await db.query<{ retired: string; rows: string }>(`SELECT countIf(${condition}) AS retired, count() AS rows FROM ${table}`);
    const retired = chNumber(counts?.retired ?? 0);
    const rows = chNumber(counts?.rows ?? 0);
    let deleting = false;
    if (retired > 0 && (retired >= rows * RETIRED_SHARE_TO_DELETE || retired >= RETIRED_ROWS_TO_DELETE)) {
      const [running] = await db.query<{ n: string }>(
        `SELECT count() AS n FROM system.mutations WHERE database = ${sqlString(db.name)} AND table = ${sqlString(table)} AND is_done = 0`,
      );
      if (chNumber(running?.n ?? 0) === 0) {
        await db.command(`ALTER TABLE ${table} DELETE WHERE ${condition}`);
        deleting = true;
      }
    }
    results.push({ table, retired, rows, deleting });
  }
  return results;
}
