import type { ChDatabase } from './ch-database';
import { monthPartition } from './ch-migrations';
import { HOUR_MS } from '../analytics-store';
import { answersBefore, deleteAnswers } from './ch-answer-retirement';
import { BROADCAST_HOURS_TABLE } from './ch-broadcast-tables';
import { CH_ROLLUPS, SESSION_HOURS } from './ch-rollups';
import { sqlInteger } from './sql-literal';

/** `YYYYMM` of an epoch-ms time (UTC), as the month partitions name themselves. */
function monthOf(ms: number): number {
  const date = new Date(ms);
  return date.getUTCFullYear() * 100 + date.getUTCMonth() + 1;
}

/**
 * Removes a tenant's events whose time is before `cutoffMs` and returns how many (copies of an
 * event counted once). Whole months before the cutoff's month that hold no other tenant's
 * events are dropped as partitions (their files go at once, without rewriting anything); the
 * rest goes by `ALTER TABLE … DELETE`, which rewrites the parts holding such rows, awaited here.
 *
 * A month is checked for other tenants' events just before it is dropped. An event of another
 * tenant written into that month in between (only an import of old events can be) would go
 * with it; the months dropped are past this tenant's retention, so they are months no live
 * ingest writes into.
 */
export async function purgeEventsBefore(db: ChDatabase, tenantSeq: number, cutoffMs: number): Promise<number> {
  const tenant = `tenant_seq = ${sqlInteger(tenantSeq)}`;
  const old = `${tenant} AND timestamp_ms < ${sqlInteger(cutoffMs)}`;
  const [counted] = await db.query<{ n: string }>(`SELECT count() AS n FROM events FINAL WHERE ${old}`);
  const count = Number(counted?.n ?? 0);
  if (count === 0) {
    await purgeIdsBefore(db, old);
    await purgeRollupsBefore(db, tenantSeq, cutoffMs);
    return 0;
  }
  const cutoffMonth = monthOf(cutoffMs);
  const months = await db.query<{ month: number; others: string }>(
    `SELECT ${monthPartition('timestamp_ms')} AS month, countIf(NOT (${tenant})) AS others FROM events
     WHERE timestamp_ms < ${sqlInteger(cutoffMs)} GROUP BY month HAVING countIf(${tenant}) > 0 ORDER BY month`,
  );
  for (const { month, others } of months) {
    if (month >= cutoffMonth || Number(others) > 0) continue;
    await db.command(`ALTER TABLE events DROP PARTITION ${sqlInteger(Number(month))}`);
    // The ids of the events dropped, which share their month partitions (after the events: see below).
    await db.command(`ALTER TABLE event_ids DROP PARTITION ${sqlInteger(Number(month))}`);
  }
  // Months shared with other tenants, and the cutoff's own month: only this tenant's old rows.
  const [left] = await db.query<{ n: string }>(`SELECT count() AS n FROM events WHERE ${old}`);
  if (Number(left?.n ?? 0) > 0) {
    await db.command(`ALTER TABLE events DELETE WHERE ${old}`);
    await db.waitForMutations('events');
  }
  await purgeIdsBefore(db, old);
  await purgeRollupsBefore(db, tenantSeq, cutoffMs);
  return count;
}

/**
 * Deletes the tenant's rollup rows of the hours that begin before the cutoff, after the events.
 * The cutoff's own hour (when the cutoff is not on the hour) is read from what is left of its
 * events until it is derived again.
 */
async function purgeRollupsBefore(db: ChDatabase, tenantSeq: number, cutoffMs: number): Promise<void> {
  const old = `tenant_seq = ${sqlInteger(tenantSeq)} AND hour < ${sqlInteger(cutoffMs)}`;
  const cutHour = Math.floor(cutoffMs / HOUR_MS) * HOUR_MS;
  // Hours with rows are marked first: a derivation that read their events before they went is
  // never used (its rows, written after the deletion below, go at the next purge).
  await db.command(`INSERT INTO touched_hours (tenant_seq, hour, touched_at) SELECT DISTINCT tenant_seq, hour, toUInt32(now()) FROM ${SESSION_HOURS.table} WHERE ${old}`);
  if (cutHour < cutoffMs) {
    await db.command(`INSERT INTO touched_hours (tenant_seq, hour, touched_at) VALUES (${sqlInteger(tenantSeq)}, ${sqlInteger(cutHour)}, toUInt32(now()))`);
  }
  // The answers kept per broadcast made from those hours' rows go first (never used again: their
  // signatures name hours that no longer hold rows), then the rows.
  await deleteAnswers(db, answersBefore(tenantSeq, cutoffMs));
  for (const table of [...CH_ROLLUPS.map((rollup) => rollup.table), BROADCAST_HOURS_TABLE]) {
    const [left] = await db.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE ${old}`);
    if (Number(left?.n ?? 0) === 0) continue;
    await db.command(`ALTER TABLE ${table} DELETE WHERE ${old}`);
    await db.waitForMutations(table);
  }
}

/**
 * Deletes the ids of the events `old` matches, after the events themselves: an id gone while
 * its event is still there would let a copy sent again be stored beside it. Also called when
 * no event is left, for ids a purge cut short left behind.
 */
async function purgeIdsBefore(db: ChDatabase, old: string): Promise<void> {
  const [left] = await db.query<{ n: string }>(`SELECT count() AS n FROM event_ids WHERE ${old}`);
  if (Number(left?.n ?? 0) === 0) return;
  await db.command(`ALTER TABLE event_ids DELETE WHERE ${old}`);
  await db.waitForMutations('event_ids');
}
