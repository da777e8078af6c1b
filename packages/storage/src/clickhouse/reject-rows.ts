import type { QuarantineRow } from '../records';
import type { ChDatabase } from './ch-database';
import { sqlInteger, sqlList } from './sql-literal';
import { ID_LIST_SETTINGS } from './query-size-settings';

/** A lone surrogate has no UTF-8 form: stored as U+FFFD. */
const wellFormed = <T extends string | null>(text: T): T => (text === null || text.isWellFormed() ? text : text.toWellFormed()) as T;

/** The JSONEachRow row `rejected_events` stores for a reject. */
export function toRejectRow(r: QuarantineRow): Record<string, unknown> {
  return {
    tenant_seq: r.tenantSeq,
    id: r.id.toLowerCase(),
    received_at_ms: r.receivedAtMs,
    code: wellFormed(r.code),
    detail: wellFormed(r.detail),
    errors: wellFormed(r.errors),
    event_name: wellFormed(r.eventName),
    user_id: wellFormed(r.userId),
    payload: wellFormed(r.payload),
  };
}

/**
 * The rejects not stored yet: a batch the writer stores again after a crash brings its
 * rejects again (their ids are random, made once at ingest).
 */
export async function newRejects(db: ChDatabase, rejects: QuarantineRow[]): Promise<QuarantineRow[]> {
  const tenants = [...new Set(rejects.map((r) => r.tenantSeq))];
  const rows = await db.query<{ id: string }>(
    `SELECT DISTINCT toString(id) AS id FROM rejected_events
     WHERE tenant_seq IN ${sqlList(tenants)} AND received_at_ms >= ${sqlInteger(Math.min(...rejects.map((r) => r.receivedAtMs)))}
       AND id IN ${sqlList(rejects.map((r) => r.id.toLowerCase()))}`,
    ID_LIST_SETTINGS,
  );
  if (!rows.length) return rejects;
  const stored = new Set(rows.map((row) => row.id));
  return rejects.filter((r) => !stored.has(r.id.toLowerCase()));
}
