import { randomBytes } from 'node:crypto';
import type { ChDatabase } from './ch-database';
import { pendingEvents, type RangeHours } from './ch-rollup-reads';
import type { PollDefinition } from '@svc/protocol';
import { derivationSql, FUNNEL_HOURS, ORDER_HOURS, SESSION_HOURS, SPONSOR_HOURS, VOTE_HOURS, type ChRollup } from './ch-rollups';
import { roomFor } from './query-size-settings';

/**
 * The rollups whose rows of the range's pending times (cut hours, hours stored into since their
 * derivation) are derived once into a table of the read's own and read from there, rather than
 * derived from the events again in every statement (or every subquery) that reads them.
 * Contest entries, read by one statement once, are derived there.
 */
export const SHARED_PENDING_ROLLUPS: readonly ChRollup[] = [SESSION_HOURS, ORDER_HOURS, FUNNEL_HOURS, SPONSOR_HOURS, VOTE_HOURS];

/** The polls the service knows among `ids` (votes on others count nowhere). */
export type KnownPolls = (ids: string[]) => Promise<PollDefinition[]>;

/** Names of the tables of pending rows start with this, then the epoch ms they were made at. */
export const PENDING_TABLE_PREFIX = 'read_pending_';
/** A table of pending rows older than this is a left-over of a read that never dropped it (its node died): dropped. */
export const PENDING_TABLE_MAX_AGE_MS = 10 * 60_000;

/** The tables of a range's pending rows, by rollup table; `drop` removes them once every panel is done. */
export interface PendingTables {
  tables: Record<string, string>;
  drop(): Promise<void>;
}

async function dropTable(db: ChDatabase, name: string): Promise<void> {
  // Emptied first: a current release's Atomic database frees a dropped table's data minutes later.
  await db.command(`TRUNCATE TABLE IF EXISTS ${name}`);
  await db.command(`DROP TABLE IF EXISTS ${name}`);
}

/**
 * Derives the pending rows of the range's tenant (every event of the pending times, whatever the
 * panels' filters: the rows carry what they filter on) into Memory tables, one per shared rollup.
 * Null when the range has no pending time, or when a table could not be made (the panels then
 * derive the pending rows in their own statements, as they would without).
 */
export async function makePendingTables(db: ChDatabase, tenantSeq: number, range: RangeHours, knownPolls: KnownPolls, nowMs: number): Promise<PendingTables | null> {
  if (!range.pending.length) return null;
  const made: string[] = [];
  const drop = async () => {
    await Promise.all(made.map((name) => dropTable(db, name).catch(() => undefined)));
  };
  try {
    const tables: Record<string, string> = {};
    await Promise.all(
      SHARED_PENDING_ROLLUPS.map(async (rollup) => {
        const name = `${PENDING_TABLE_PREFIX}${Math.floor(nowMs)}_${randomBytes(6).toString('hex')}`;
        const events = pendingEvents(rollup, { tenantSeq }, range, false)!;
        // Votes are checked against the polls they name, as the service knows them now.
        let polls: PollDefinition[] = [];
        if (rollup === VOTE_HOURS) {
          const named = `SELECT DISTINCT data_poll_id AS poll_id FROM ${events}`;
          polls = await knownPolls((await db.query<{ poll_id: string }>(named, roomFor(named))).map((row) => row.poll_id));
        }
        const sql = `CREATE TABLE ${name} ENGINE = Memory AS ${derivationSql(rollup, events, '0', '0', polls)}`;
        made.push(name);
        await db.command(sql, roomFor(sql));
        tables[rollup.table] = name;
      }),
    );
    return { tables, drop };
  } catch {
    await drop();
    return null;
  }
}

/** Drops the tables of pending rows reads left behind (made more than `maxAgeMs` before `nowMs`); returns how many. */
export async function dropLeftPendingTables(db: ChDatabase, nowMs: number, maxAgeMs = PENDING_TABLE_MAX_AGE_MS): Promise<number> {
  const rows = await db.query<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, '${PENDING_TABLE_PREFIX}')`,
  );
  const old = rows
    .map((row) => row.name)
    .filter((name) => {
      const madeAt = Number(name.slice(PENDING_TABLE_PREFIX.length).split('_')[0]);
      return Number.isFinite(madeAt) && madeAt < nowMs - maxAgeMs;
    });
  for (const name of old) await dropTable(db, name);
  return old.length;
}
