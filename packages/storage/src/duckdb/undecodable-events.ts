import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Events whose JSON text (`data`, `items`) DuckDB's JSON reader refuses, such as the lone
 * surrogate escapes (`"\ud800"`) that JSON.stringify wrote for text the edge did not mend in
 * earlier versions. Every JSON function over such a row throws, and with it the whole statement:
 * the rollups of every tenant, deletions, room loading, start-up. A reader that meets one sets
 * the rows of its scope that cannot be read aside (moved out of `events` into this table, kept
 * whole as text for inspection and erased with their user) and tries again.
 */
export const UNDECODABLE_EVENTS_TABLE = 'undecodable_events';

/** The table, created at open (not a migration: it only ever receives rows an older version stored). */
export const CREATE_UNDECODABLE_EVENTS_SQL = `CREATE TABLE IF NOT EXISTS ${UNDECODABLE_EVENTS_TABLE} (
  tenant_seq INTEGER NOT NULL, event_id UUID NOT NULL, user_id VARCHAR, set_aside_at TIMESTAMP NOT NULL, row_text VARCHAR NOT NULL)`;

/** An event set aside: which one, never its content. */
export interface UndecodableEvent {
  tenantSeq: number;
  eventId: string;
}

/** True for a row of `events` that a JSON function cannot read. */
const UNREADABLE = 'NOT (coalesce(json_valid(data), true) AND coalesce(json_valid(items), true))';

/** Whether a failed statement failed on text DuckDB's JSON reader refuses. */
export function isUndecodableTextError(error: unknown): boolean {
  return error instanceof Error && /Malformed JSON|no low surrogate|invalid (?:unicode|utf-?8)/i.test(error.message);
}

/**
 * Moves the unreadable events of `scope` (a condition on `events`, built from numbers only)
 * aside, in one transaction on `connection` (which must not be inside one). Returns them; none
 * when the scope holds no such row.
 */
export async function setAsideUndecodableEvents(connection: DuckDBConnection, scope: string): Promise<UndecodableEvent[]> {
  const where = `(${scope}) AND ${UNREADABLE}`;
  await connection.run('BEGIN TRANSACTION');
  try {
    // to_json of the whole row quotes data and items as strings: nothing parses them.
    const reader = await connection.runAndReadAll(
      `INSERT INTO ${UNDECODABLE_EVENTS_TABLE}
       SELECT tenant_seq, event_id, user_id, now(), to_json(e)::VARCHAR FROM events e WHERE ${where}
       RETURNING tenant_seq, event_id::VARCHAR AS event_id`,
    );
    const rows = reader.getRowObjectsJS().map((row) => ({ tenantSeq: Number(row.tenant_seq), eventId: String(row.event_id) }));
    if (rows.length) await connection.run(`DELETE FROM events WHERE ${where}`);
    await connection.run('COMMIT');
    return rows;
  } catch (error) {
    await connection.run('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** Scope of the events of commit batches (after, upTo]. */
export const batchScope = (after: number, upTo: number): string => `batch > ${Math.trunc(after)} AND batch <= ${Math.trunc(upTo)}`;

/** Scope of one tenant's events. */
export const tenantScope = (tenantSeq: number): string => `tenant_seq = ${Math.trunc(tenantSeq)}`;
