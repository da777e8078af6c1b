import type { DuckDBConnection } from '@duckdb/node-api';
import { appendRollupsSql } from './analytics-rollups';
import type { DuckDbDatabase } from './duckdb-database';
import { batchScope, isUndecodableTextError } from './undecodable-events';

/** After a failed derivation, the next try waits this long (unless a read or a commit asks sooner). */
const RETRY_DELAY_MS = 1_000;
/** Events commits may store ahead of the rollups before a commit waits for them to catch up. */
export const MAX_QUEUED_EVENTS = 100_000;

/**
 * The dashboard's rollups (see analytics-rollups) are derived from the events a commit stores,
 * but not in the commit's transaction. Each commit numbers its rows (`events.batch`, in the
 * commit's transaction); the rollups of the batches after the watermark in `rollup_watermark`
 * are derived, and the watermark moved, in a transaction of their own on a second connection
 * while the next commit is being written (rows appended in batch order keep the scan to the
 * newest row groups). Deriving them in the commit made every commit half as long again; this
 * way the two run side by side, and a crash in between leaves batches past the watermark,
 * derived at the next start. Readers of the rollups call `settled()` first, so they see every
 * event committed before they asked. Work that changes events and rollups together (deletion,
 * retention) runs through `transaction()`, which derives the pending batches first.
 */
export class RollupQueue {
  /** The last batch number given out. */
  private lastBatch = 0;
  /** Every batch up to `applied` is in the rollups; later ones committed so far are pending. */
  private applied = 0;
  private pending: Array<{ batch: number; events: number }> = [];
  /** Event types of the pending batches. */
  private eventTypes = new Set<string>();
  private scheduled: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private waiters: Array<{ batch: number; done: () => void }> = [];
  private stopped = false;

  constructor(private readonly db: DuckDbDatabase) {}

  /** Derives the batches an earlier process committed without their rollups (a crash in between). */
  async recover(): Promise<void> {
    await this.db.write(async (c) => {
      const [row] = await this.db.writeQuery(
        c,
        'SELECT (SELECT applied FROM rollup_watermark) AS applied, (SELECT coalesce(max(batch), 0) FROM events) AS last',
      );
      this.applied = Number(row?.applied ?? 0);
      this.lastBatch = Math.max(this.applied, Number(row?.last ?? 0));
      if (this.lastBatch > this.applied) {
        await this.deriveSettingAside(c, this.applied, this.lastBatch);
        this.applied = this.lastBatch;
      }
    });
  }

  /** A number for the batch a commit is about to store (call it in the commit's write job). */
  nextBatch(): number {
    return ++this.lastBatch;
  }

  /** The commit of `batch` (events of `eventTypes`) is durable: derive its rollups soon. */
  committedBatch(batch: number, events: number, eventTypes: Iterable<string>): void {
    // A transaction() may have derived it already.
    if (batch <= this.applied) return;
    this.pending.push({ batch, events });
    for (const type of eventTypes) this.eventTypes.add(type);
    this.schedule();
  }

  /** True when commits should wait for the rollups (`settled()`) before adding more. */
  isFull(): boolean {
    return this.pending.reduce((sum, p) => sum + p.events, 0) >= MAX_QUEUED_EVENTS;
  }

  /** Resolves once the rollups hold every batch committed before this call (or deriving them failed). */
  settled(): Promise<void> {
    const last = this.pending.at(-1);
    if (!last || this.stopped) return Promise.resolve();
    this.schedule();
    return new Promise((done) => this.waiters.push({ batch: last.batch, done }));
  }

  /**
   * Runs `job` in one transaction on the write connection, after every pending batch is
   * derived into the rollups in that same transaction, with no derivation running beside it.
   */
  transaction<T>(job: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.db.exclusiveWrite(async (connection) => {
      // No commit runs now, so events hold batches up to lastBatch at most, some perhaps not
      // reported to committedBatch() yet: derive them all, of every event type.
      const upTo = this.lastBatch;
      const result = upTo > this.applied ? await this.deriveSettingAside(connection, this.applied, upTo, undefined, job) : await runInTransaction(connection, [], job);
      this.markApplied(upTo);
      return result;
    });
  }

  /** Stops deriving (the database is closing); pending batches are derived at the next start. */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.releaseWaiters(Number.POSITIVE_INFINITY);
  }

  private schedule(): void {
    if (this.scheduled || this.retryTimer || this.stopped || !this.pending.length) return;
    this.scheduled = this.derive().finally(() => {
      this.scheduled = null;
      this.schedule();
    });
  }

  /** Derives the rollups of the pending batches on the side connection and moves the watermark past them. */
  private async derive(): Promise<void> {
    let upTo = 0;
    let from = 0;
    let eventTypes = new Set<string>();
    try {
      await this.db.sideWrite(async (c) => {
        // Read here, in turn: a transaction() queued before may have derived some already.
        const last = this.pending.at(-1);
        if (!last || last.batch <= this.applied) return;
        upTo = last.batch;
        from = this.applied;
        eventTypes = this.eventTypes;
        this.eventTypes = new Set();
        await runInTransaction(c, deriveSql(this.applied, upTo, eventTypes));
        this.markApplied(upTo);
      });
    } catch (error) {
      for (const type of eventTypes) this.eventTypes.add(type);
      // An unreadable event must not hold up every tenant's rollups: it is set aside (both
      // write connections held, as commits write to events) and the batches derived again at once.
      if (isUndecodableTextError(error) && !this.stopped) {
        const setAside = await this.db.exclusiveWrite((c) => this.db.setAsideUndecodable(c, batchScope(from, upTo))).catch(() => 0);
        if (setAside) return;
      }
      // The batches stay pending and readers go on with what the rollups hold; the timer tries
      // again (the database counts the refused write and readiness reports it).
      this.releaseWaiters(Math.max(upTo, this.pending.at(-1)?.batch ?? 0));
      if (!this.stopped) {
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          this.schedule();
        }, RETRY_DELAY_MS).unref();
      }
    }
  }

  /**
   * Derives batches (applied, upTo] (then runs `job`) in one transaction on `connection`, which
   * the caller holds with both write connections. Events there that DuckDB cannot read are set
   * aside first if the derivation fails on them: no stored row stops start-up or a deletion.
   */
  private async deriveSettingAside<T>(
    connection: DuckDBConnection,
    applied: number,
    upTo: number,
    eventTypes?: ReadonlySet<string>,
    job?: (c: DuckDBConnection) => Promise<T>,
  ): Promise<T> {
    try {
      return await runInTransaction(connection, deriveSql(applied, upTo, eventTypes), job);
    } catch (error) {
      if (!isUndecodableTextError(error) || !(await this.db.setAsideUndecodable(connection, batchScope(applied, upTo)))) throw error;
      return runInTransaction(connection, deriveSql(applied, upTo, eventTypes), job);
    }
  }

  private markApplied(upTo: number): void {
    this.applied = Math.max(this.applied, upTo);
    this.pending = this.pending.filter((p) => p.batch > this.applied);
    if (!this.pending.length) this.eventTypes = new Set();
    this.releaseWaiters(this.applied);
  }

  private releaseWaiters(upTo: number): void {
    const ready = this.waiters.filter((w) => w.batch <= upTo);
    if (!ready.length) return;
    this.waiters = this.waiters.filter((w) => w.batch > upTo);
    for (const waiter of ready) waiter.done();
  }
}

/** Statements deriving the rollups of the batches after `applied` up to `upTo` (of `eventTypes`, all when absent) and moving the watermark. */
function deriveSql(applied: number, upTo: number, eventTypes?: ReadonlySet<string>): string[] {
  const source = `(SELECT * FROM events WHERE batch > ${Math.trunc(applied)} AND batch <= ${Math.trunc(upTo)})`;
  return [...appendRollupsSql(source, eventTypes), `UPDATE rollup_watermark SET applied = ${Math.trunc(upTo)}`];
}

/**
 * Runs `statements` (one batch of SQL), then `job`, in one transaction; rolls back on failure.
 * Without a job the COMMIT goes in the same batch: under load each call waits its turn on the
 * event loop.
 */
async function runInTransaction<T>(connection: DuckDBConnection, statements: string[], job?: (c: DuckDBConnection) => Promise<T>): Promise<T> {
  try {
    await connection.run(['BEGIN TRANSACTION', ...statements, ...(job ? [] : ['COMMIT'])].join(';\n'));
    if (!job) return undefined as T;
    const result = await job(connection);
    await connection.run('COMMIT');
    return result;
  } catch (error) {
    await connection.run('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
