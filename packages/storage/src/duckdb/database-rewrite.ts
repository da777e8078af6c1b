import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * DuckDB does not zero the blocks a DELETE frees, and a checkpoint reuses them only when it
 * needs room: the bytes of erased rows stay in the file, readable with any byte search. What
 * removes them is writing the live rows into a fresh file (`COPY FROM DATABASE`, which carries
 * tables, constraints, defaults and sequences at their current value) and putting that file in
 * place of the old one.
 *
 * Crash safety comes from the order: the fresh file is complete (detached, hence checkpointed,
 * and fsynced) before one `rename` replaces the old one, and the old one has no WAL then (it
 * was checkpointed and closed with no write in between). A crash before the rename leaves the
 * old file as it was and a partial fresh file, which the next start deletes
 * (`removeUnfinishedRewrite`); a crash after it leaves the fresh file, complete.
 */

/** The fresh file is written beside the database under this suffix. */
const REWRITE_SUFFIX = '.rewrite';
/** The catalog name the fresh file is attached under while it is written. */
const REWRITE_CATALOG = 'svc_rewrite';

export function rewritePath(databasePath: string): string {
  return `${databasePath}${REWRITE_SUFFIX}`;
}

export function walPath(databasePath: string): string {
  return `${databasePath}.wal`;
}

/** Deletes what a rewrite interrupted before its rename left (the database itself is untouched). */
export function removeUnfinishedRewrite(databasePath: string): void {
  const path = rewritePath(databasePath);
  rmSync(path, { force: true });
  rmSync(walPath(path), { force: true });
}

/**
 * Writes every live row of the connection's database into the fresh file beside it. The
 * caller holds every write connection: nothing may change the database meanwhile.
 */
export async function copyIntoFreshFile(writer: DuckDBConnection, databasePath: string): Promise<void> {
  removeUnfinishedRewrite(databasePath);
  const rows = (await writer.runAndReadAll('SELECT current_database() AS name')).getRowObjectsJS();
  const source = String(rows[0]?.name);
  await writer.run(`ATTACH ${sqlString(rewritePath(databasePath))} AS ${REWRITE_CATALOG}`);
  try {
    await writer.run(`COPY FROM DATABASE ${sqlIdentifier(source)} TO ${REWRITE_CATALOG}`);
  } catch (error) {
    await writer.run(`DETACH ${REWRITE_CATALOG}`).catch(() => undefined);
    removeUnfinishedRewrite(databasePath);
    throw error;
  }
  // Detaching checkpoints the fresh file: it then has no WAL.
  await writer.run(`DETACH ${REWRITE_CATALOG}`);
}

/**
 * Puts the fresh file in place of the closed database. Refuses (and removes the fresh file)
 * if the database has a WAL: its changes would be in neither file once replaced.
 */
export function replaceWithFreshFile(databasePath: string): void {
  const fresh = rewritePath(databasePath);
  if (existsSync(walPath(databasePath)) || existsSync(walPath(fresh))) {
    removeUnfinishedRewrite(databasePath);
    throw new Error(`the database ${databasePath} has a write-ahead log after its checkpoint; it was not replaced`);
  }
  fsyncPath(fresh);
  renameSync(fresh, databasePath);
  fsyncPath(dirname(databasePath));
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

function sqlIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
