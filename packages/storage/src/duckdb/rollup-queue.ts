import type { DuckDBConnection } from '@duckdb/node-api';
import { appendRollupsSql } from './analytics-rollups';
import type { DuckDbDatabase } from './duckdb-database';

/** Columns of `rollup_queue` after `batch`: the event as a commit stages it. */
export const QUEUED_EVENT_COLUMNS = `tenant_seq INTEGER, event_id VARCHAR, event VARCHAR, user_id VARCHAR, session_id VARCHAR,
  broadcast_id VARCHAR, campaign_id BIGINT, ts_ms BIGINT, received_at_ms BIGINT, country VARCHAR,
  order_id VARCHAR, sponsor_id VARCHAR, total DOUBLE, items VARCHAR, data VARCHAR`;

/** Staged or queued rows (columns as `QUEUED_EVENT_COLUMNS`) with the columns of `events`. */
export function asEvents(source: string, where = ''): string {
  return `(SELECT tenant_seq, event_id::UUID AS event_id, event, user_id, session_id, broadcast_id, campaign_id,
    epoch_ms(ts_ms) AS ts, epoch_ms(received_at_ms) AS received_at, country, order_id, sponsor_id, total, items, data
  FROM ${source} ${where})`;
}

/** After a failed derivation, the next try waits this long (unless a read or a commit asks sooner). */
const RETRY_DELAY_MS = 1_000;
/** Events a commit may leave queued before it waits for the rollups to catch up. */
export const MAX_QUEUED_EVENTS = 100_000;

/**
 * The dashboard's rollups (see analytics-rollups) are derived from the events a commit stores,
 * but not in the commit's transaction: the commit copies its rows into `rollup_queue` (same
 * transaction as `events`, so a crash loses neither or both), and the rollups are derived from
 * the queue and the queue emptied in a transaction of their own, on a second connection, while
 * the next commit is being written. Deriving them in the commit made every commit half as long
 * again; this way the two run side by side. Readers of the rollups call `settled()` first, so
 * they see every event committed before they asked. Work that changes events and rollups
 * together (deletion, retention) runs through `transaction()`, which empties the queue first.
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

  /** Derives what an earlier process left in the queue (a crash between a commit and its rollups). */
  async recover(): Promise<void> {
    await this.db.write(async (c) => {
      const [row] = await this.db.writeQuery(c, 'SELECT max(batch) AS last FROM rollup_queue');
      this.lastBatch = this.applied = Number(row?.last ?? 0);
      if (row?.last !== null && row?.last !== undefined) await runInTransaction(c, deriveSql());
    });
  }

  /** A number for the batch a commit is about to put in the queue (call it in the write job). */
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
   * Runs `job` in one transaction on the write connection, after the whole queue is derived
   * into the rollups in that same transaction, with no derivation running beside it.
   */
  transaction<T>(job: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.db.exclusiveWrite(async (connection) => {
      // No commit runs now, so the queue holds batches up to lastBatch at most, some perhaps
      // not reported to committedBatch() yet: derive everything, of every event type.
      const upTo = this.lastBatch;
      const result = await runInTransaction(connection, deriveSql(), job);
      this.markApplied(upTo);
      return result;
    });
  }

  /** Stops deriving (the database is closing); what is queued stays for the next start. */
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

  /** Derives the rollups of the pending batches on the side connection and takes them off the queue. */
  private async derive(): Promise<void> {
    const upTo = this.pending.at(-1)!.batch;
    const eventTypes = this.eventTypes;
    this.eventTypes = new Set();
    try {
      await this.db.sideWrite((c) => runInTransaction(c, deriveSql(upTo, eventTypes)));
      this.markApplied(upTo);
    } catch {
      // The rows stay queued and readers go on with what the rollups hold; the timer tries
      // again (the database counts the refused write and readiness reports it).
      for (const type of eventTypes) this.eventTypes.add(type);
      this.releaseWaiters(upTo);
      if (!this.stopped) {
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          this.schedule();
        }, RETRY_DELAY_MS).unref();
      }
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

/** Statements deriving the rollups of the queued batches up to `upTo` (all when absent) and removing them. */
function deriveSql(upTo?: number, eventTypes?: ReadonlySet<string>): string[] {
  const where = upTo === undefined ? '' : `WHERE batch <= ${Math.trunc(upTo)}`;
  return [...appendRollupsSql(asEvents('rollup_queue', where), eventTypes), `DELETE FROM rollup_queue ${where}`];
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
