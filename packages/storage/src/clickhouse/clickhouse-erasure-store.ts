import { SvcError } from '@svc/protocol';
import { hashUserId, type DeletionJob, type ErasedCounts } from '../deletion-job-store';
import type { UserErasureStore } from '../user-erasure-store';
import { chNumber, DEFAULT_MUTATION_WAIT_MS, type ChDatabase } from './ch-database';
import { deleteAnswers } from './ch-answer-retirement';
import { BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE } from './ch-broadcast-tables';
import { CH_ROLLUPS, EVENT_HOUR, SESSION_HOURS } from './ch-rollups';
import { roomFor } from './query-size-settings';
import { sqlInteger, sqlList, sqlString } from './sql-literal';
import { pendingUserDeletions, waitForUserDeletions } from './user-deletions';

/** The tables that hold users' rows (`event_ids`: the ids of their events, which the writer's duplicate lookup reads). */
const USER_TABLES = ['events', 'rejected_events', 'event_ids'] as const;
/** The dashboard's rollups: rows of a user's sessions, votes, orders… (ch-rollups.ts). */
const ROLLUP_TABLES = CH_ROLLUPS.map((rollup) => rollup.table);
type UserTable = (typeof USER_TABLES)[number] | (typeof ROLLUP_TABLES)[number];
/**
 * How long `rewriteErased` waits for the parts a deletion replaced to leave the disk: the
 * server removes an inactive part `old_parts_lifetime` (480 s by default) after it was
 * replaced, at its next cleanup (every 30–40 s), or later while a query still reads it.
 */
export const DEFAULT_PART_REMOVAL_WAIT_MS = 15 * 60_000;
/** Between two looks at `system.parts`. */
const PART_POLL_INTERVAL_MS = 1_000;

export interface ClickHouseErasureOptions {
  /** Bound of `rewriteErased`'s wait for replaced parts to be removed, ms; default `DEFAULT_PART_REMOVAL_WAIT_MS`. */
  partRemovalWaitMs?: number;
  /** Bound of `erase`'s wait for its deletion to be done, ms; default `DEFAULT_MUTATION_WAIT_MS`. */
  mutationWaitMs?: number;
}

/**
 * Erasure of a user's events and quarantined rejects in ClickHouse. `ALTER TABLE … DELETE`
 * is a mutation: the server rewrites every part holding matching rows into a new part without
 * them, in the background; `erase` waits until it is done (`system.mutations`), so the job's
 * `completedAt` is when no read can return the rows any more. The replaced parts stay on disk,
 * inactive, until the server removes them (`rewriteErased` waits for that).
 */
export class ClickHouseErasureStore implements UserErasureStore {
  private readonly partRemovalWaitMs: number;
  private readonly mutationWaitMs: number;

  constructor(
    private readonly db: ChDatabase,
    options: ClickHouseErasureOptions = {},
  ) {
    this.partRemovalWaitMs = options.partRemovalWaitMs ?? DEFAULT_PART_REMOVAL_WAIT_MS;
    this.mutationWaitMs = options.mutationWaitMs ?? DEFAULT_MUTATION_WAIT_MS;
  }

  async erase(job: Pick<DeletionJob, 'tenantSeq' | 'userHash'>, userId?: string): Promise<ErasedCounts> {
    // Without the id in clear, SHA256() over the user column finds the rows by their hash.
    const clear = userId !== undefined && hashUserId(userId) === job.userHash;
    // The condition must never be NULL: 18.16's ALTER … DELETE deletes the rows whose condition
    // is NULL (`user_id = 'x'` on a row without user would go), so user_id is read as not null.
    const user = clear ? sqlString(userId) : sqlString(job.userHash.toLowerCase());
    const column = clear ? 'assumeNotNull(user_id)' : 'lower(hex(SHA256(assumeNotNull(user_id))))';
    const match = `tenant_seq = ${sqlInteger(job.tenantSeq)} AND user_id IS NOT NULL AND ${column} = ${user}`;
    // The hours of the user's events, found before they go (their ids hold the times), and their broadcasts.
    const hours = await this.db.query<{ hour: string }>(`SELECT DISTINCT ${EVENT_HOUR} AS hour FROM event_ids WHERE ${match}`);
    // (From the rollups too: a deletion tried again finds no event left.)
    const broadcasts = (
      await this.db.query<{ broadcast_id: string }>(`SELECT DISTINCT broadcast_id FROM events WHERE ${match} UNION ALL SELECT DISTINCT broadcast_id FROM ${SESSION_HOURS.table} WHERE ${match}`)
    ).map((row) => row.broadcast_id);
    // Counted before deleting (a mutation reports no count); copies of an event count once.
    const deletedEvents = await this.count('events', match);
    const deletedRejects = await this.count('rejected_events', match);
    await this.delete('events', match, deletedEvents, job);
    // After the events: while they are there their ids must be too, or a copy sent again would
    // be stored beside them. Looked for even when no event was left, after a deletion cut short.
    await this.delete('event_ids', match, await this.count('event_ids', match), job);
    await this.delete('rejected_events', match, deletedRejects, job);
    // The hours the user had events or rollup rows in are read from what is left of their events
    // until they are derived again: marked now, after the events went, so that a derivation that
    // read them before is never used. Then the rows go.
    if (hours.length) {
      const marks = `INSERT INTO touched_hours (tenant_seq, hour, touched_at) VALUES ${hours.map((row) => `(${sqlInteger(job.tenantSeq)}, ${sqlInteger(chNumber(row.hour))}, toUInt32(now()))`).join(', ')}`;
      await this.db.command(marks, roomFor(marks));
    }
    await this.db.command(
      `INSERT INTO touched_hours (tenant_seq, hour, touched_at) SELECT DISTINCT tenant_seq, hour, toUInt32(now()) FROM ${SESSION_HOURS.table} WHERE ${match}`,
    );
    for (const table of ROLLUP_TABLES) await this.delete(table, match, await this.count(table, match), job);
    // The answers kept for those broadcasts hold the user's viewer and session keys: they go too
    // (made again from the rows once the hours are derived again).
    if (broadcasts.length) {
      await deleteAnswers(this.db, `tenant_seq = ${sqlInteger(job.tenantSeq)} AND broadcast_id IN ${sqlList([...new Set(broadcasts)])}`, this.mutationWaitMs);
    }
    return { deletedEvents, deletedRejects };
  }

  /**
   * Waits until the deletions started before the call are done and the parts they replaced
   * (and every other part inactive at the call) have left the disk. Fails with
   * `storage_unavailable` if that takes longer than `partRemovalWaitMs`.
   */
  async rewriteErased(): Promise<void> {
    const tables = [...USER_TABLES, ...ROLLUP_TABLES, BROADCAST_ANSWERS_TABLE, BROADCAST_ANSWERED_TABLE];
    for (const table of tables) await this.db.waitForMutations(table);
    const parts = await this.db.query<{ name: string }>(
      `SELECT name FROM system.parts WHERE database = ${sqlString(this.db.name)} AND table IN ${sqlList(tables)} AND active = 0`,
    );
    if (!parts.length) return;
    const names = sqlList(parts.map((p) => p.name));
    const deadline = Date.now() + this.partRemovalWaitMs;
    for (;;) {
      const [left] = await this.db.query<{ n: string }>(
        `SELECT count() AS n FROM system.parts WHERE database = ${sqlString(this.db.name)} AND table IN ${sqlList(tables)} AND name IN ${names} AND active = 0`,
      );
      if (chNumber(left?.n ?? 0) === 0) return;
      if (Date.now() > deadline) {
        throw new SvcError('storage_unavailable', `Parts replaced by deletions are still on disk after ${this.partRemovalWaitMs} ms. Retry later.`);
      }
      await new Promise((resolve) => setTimeout(resolve, PART_POLL_INTERVAL_MS));
    }
  }

  private async count(table: UserTable, match: string): Promise<number> {
    // Copies merged by FINAL where the table merges them; the rollups' rows are counted as they are.
    const final = (USER_TABLES as readonly string[]).includes(table) ? ' FINAL' : '';
    const [row] = await this.db.query<{ n: string }>(`SELECT count() AS n FROM ${table}${final} WHERE ${match}`);
    return chNumber(row?.n ?? 0);
  }

  /**
   * Deletes the rows matching `match` (`rows` of them counted before) and waits until that is
   * done. A job tried again after its wait timed out finds the deletion it started still running
   * on the server (`system.mutations`): it waits for that one instead of starting another (each
   * rewrites every part holding the user's rows), and starts a new one only for rows left after
   * it (stored since the first began).
   */
  private async delete(table: UserTable, match: string, rows: number, user: Pick<DeletionJob, 'tenantSeq' | 'userHash'>): Promise<void> {
    if ((await pendingUserDeletions(this.db, table, user)).length) {
      await waitForUserDeletions(this.db, table, user, this.mutationWaitMs);
      rows = await this.count(table, match);
    }
    // A mutation rewrites parts: none is started when there is nothing to delete.
    if (rows === 0) return;
    await this.db.command(`ALTER TABLE ${table} DELETE WHERE ${match}`);
    // Every unfinished mutation of the table, not only those recognised as the user's: the job
    // is complete only once this one is done, whatever the server's spelling of its command.
    await this.db.waitForMutations(table, this.mutationWaitMs);
  }
}
