import { hashUserId } from '../deletion-job-store';
import type { PgDatabase } from './pg-database';

/** How often the deletion jobs are read again; a job started elsewhere is seen within this time. */
export const DEFAULT_TOMBSTONE_REFRESH_MS = 1_000;
/**
 * Jobs requested this long ago or less are kept: longer than a delivery can wait in the queue
 * (the retry schedule takes about 3.5 days) with room for a writer's lag.
 */
export const TOMBSTONE_HORIZON_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Which users are being or have been erased, from the shared deletion jobs, held in memory so
 * that a dispatcher asks before every send without a query: a delivery made before its user's
 * deletion was requested is not sent. Read again every `refreshMs` (and by `refresh`).
 */
export class PgErasureTombstones {
  /** `${tenantSeq}:${userHash}` -> the latest request time of a job for that user. */
  private requested = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private reading: Promise<void> | null = null;
  private again: Promise<void> | null = null;

  constructor(
    private readonly db: PgDatabase,
    private readonly refreshMs: number = DEFAULT_TOMBSTONE_REFRESH_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reads the jobs, then keeps reading them every `refreshMs`; a failed read keeps the last answer. */
  async start(onError: (error: unknown) => void = () => {}): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh().catch(onError), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Reads the jobs again. Reads never overlap: a call while one is under way waits for it and
   * then reads once more (a job made meanwhile may be missing from it), shared by every call
   * made in the meantime; a slow database gets one query at a time, never one per tick.
   */
  refresh(): Promise<void> {
    if (!this.reading) {
      this.reading = this.read().finally(() => (this.reading = null));
      return this.reading;
    }
    this.again ??= this.reading
      .catch(() => undefined)
      .then(() => {
        this.again = null;
        return this.refresh();
      });
    return this.again;
  }

  private async read(): Promise<void> {
    const rows = await this.db.run(
      (sql) => sql<{ tenant_seq: number; user_hash: string; requested_at: Date }[]>`
        SELECT tenant_seq, user_hash, max(requested_at) AS requested_at FROM deletion_jobs
        WHERE status <> 'failed' AND requested_at >= ${new Date(this.now() - TOMBSTONE_HORIZON_MS)}
        GROUP BY tenant_seq, user_hash`,
    );
    this.requested = new Map(rows.map((r) => [`${r.tenant_seq}:${r.user_hash}`, r.requested_at.getTime()]));
  }

  /** Whether the event of a delivery made at `createdAt` for `userId` is (being) erased. */
  erased(delivery: { tenantSeq: number; userId: string | null; createdAt: number }): boolean {
    if (delivery.userId === null || !this.requested.size) return false;
    const requestedAt = this.requested.get(`${delivery.tenantSeq}:${hashUserId(delivery.userId)}`);
    return requestedAt !== undefined && delivery.createdAt <= requestedAt;
  }
}
