import { randomBytes } from 'node:crypto';
import type { PollDefinition } from '@svc/protocol';
import type { AnalyticsFilter } from '../analytics-store';
import type { ChDatabase } from './ch-database';
import { pendingEvents, type RangeHours } from './ch-rollup-reads';
import { derivationSql, FUNNEL_HOURS, ORDER_HOURS, SESSION_HOURS, SPONSOR_HOURS, VOTE_HOURS, type ChRollup } from './ch-rollups';
import { roomFor } from './query-size-settings';
import { isPlainIdentifier } from './sql-literal';

/**
 * The rollups whose rows of the range's pending times (cut hours, hours stored into since their
 * derivation) are derived once into a table of the read's own and read from there, rather than
 * derived from the events again in every statement (or every subquery) that reads them.
 * Contest entries, read by one statement once, are derived there.
 */
export const SHARED_PENDING_ROLLUPS: readonly ChRollup[] = [SESSION_HOURS, ORDER_HOURS, FUNNEL_HOURS, SPONSOR_HOURS, VOTE_HOURS];

/** Names of the tables of pending rows start with this, then the epoch ms they were made at. */
export const PENDING_TABLE_PREFIX = 'read_pending_';
/** A table of pending rows older than this is a left-over of a read that never dropped it (its node died): dropped. */
export const PENDING_TABLE_MAX_AGE_MS = 10 * 60_000;
/** After the server refused to make a table (no right to, out of memory…), reads derive on the spot for this long before trying again. */
export const PENDING_TABLES_PAUSE_MS = 10 * 60_000;

/** The polls the service knows among `ids` (votes on others count nowhere). */
export type KnownPolls = (ids: string[]) => Promise<PollDefinition[]>;

async function dropTable(db: ChDatabase, name: string): Promise<void> {
  // Emptied first: a current release's Atomic database frees a dropped table's data minutes later.
  await db.command(`TRUNCATE TABLE IF EXISTS ${name}`);
  await db.command(`DROP TABLE IF EXISTS ${name}`);
}

/** When the tables of pending rows may be made: shared by a store's reads. */
export interface PendingTablesState {
  /** Epoch ms before which no table is made (the server refused one). */
  pausedUntilMs: number;
}

/**
 * The tables of one read's pending rows: for the range's tenant (and broadcast, when the read is
 * of one), every event of the pending times, whatever the panels' other filters (the rows carry
 * what they filter on). Made per rollup when a panel first needs it, shared by the panels of the
 * read, dropped by `drop` once they are done. A rollup whose table could not be made has none: its
 * panels derive its pending rows in their own statements, as they would without.
 */
export class PendingTables {
  private readonly making = new Map<ChRollup, Promise<void>>();
  private readonly made: string[] = [];

  constructor(
    private readonly db: ChDatabase,
    private readonly scope: Pick<AnalyticsFilter, 'tenantSeq' | 'broadcastId'>,
    private readonly range: RangeHours,
    private readonly knownPolls: KnownPolls,
    private readonly state: PendingTablesState,
    private readonly now: () => number,
  ) {}

  /** Makes the tables of `rollups` not made yet (each once, however many panels ask) and lists them in `range.pendingTables`. */
  async prepare(rollups: readonly ChRollup[]): Promise<void> {
    await Promise.all(
      rollups.map((rollup) => {
        let making = this.making.get(rollup);
        if (!making) {
          making = this.make(rollup);
          this.making.set(rollup, making);
        }
        return making;
      }),
    );
  }

  private async make(rollup: ChRollup): Promise<void> {
    if (!this.range.pending.length || !SHARED_PENDING_ROLLUPS.includes(rollup) || this.now() < this.state.pausedUntilMs) return;
    const name = `${PENDING_TABLE_PREFIX}${Math.floor(this.now())}_${randomBytes(6).toString('hex')}`;
    // Listed before any request: a table whose making fails half-way is dropped all the same.
    this.made.push(name);
    // A rollup left without a table has its rows derived in its panels' own statements.
    const events = pendingEvents(rollup, this.scope, this.range, false)!;
    let polls: PollDefinition[] = [];
    if (rollup === VOTE_HOURS) {
      // Votes are checked against the polls they name, as the service knows them now.
      const named = `SELECT DISTINCT data_poll_id AS poll_id FROM ${events}`;
      try {
        polls = await this.knownPolls((await this.db.query<{ poll_id: string }>(named, roomFor(named))).map((row) => row.poll_id));
      } catch {
        return;
      }
    }
    const sql = `CREATE TABLE ${name} ENGINE = Memory AS ${derivationSql(rollup, events, '0', '0', polls)}`;
    try {
      await this.db.command(sql, roomFor(sql));
    } catch {
      // The server refused the table, or its answer was lost: none for a while.
      this.state.pausedUntilMs = this.now() + PENDING_TABLES_PAUSE_MS;
      return;
    }
    this.range.pendingTables = { ...this.range.pendingTables, [rollup.table]: name };
  }

  /** Drops every table made, once those being made are made (or failed). */
  async drop(): Promise<void> {
    await Promise.allSettled(this.making.values());
    await Promise.allSettled(this.made.map((name) => dropTable(this.db, name)));
  }
}

/**
 * Drops the tables of pending rows reads left behind (made more than `maxAgeMs` before `nowMs`);
 * returns how many. One that cannot be dropped now is left for the next look.
 */
export async function dropLeftPendingTables(db: ChDatabase, nowMs: number, maxAgeMs = PENDING_TABLE_MAX_AGE_MS): Promise<number> {
  const rows = await db.query<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, '${PENDING_TABLE_PREFIX}')`,
  );
  const old = rows
    .map((row) => row.name)
    .filter((name) => {
      const madeAt = Number(name.slice(PENDING_TABLE_PREFIX.length).split('_')[0]);
      return isPlainIdentifier(name) && Number.isFinite(madeAt) && madeAt < nowMs - maxAgeMs;
    });
  const dropped = await Promise.allSettled(old.map((name) => dropTable(db, name)));
  return dropped.filter((result) => result.status === 'fulfilled').length;
}
