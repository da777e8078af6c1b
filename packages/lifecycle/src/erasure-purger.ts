import { systemClock, type Bus, type Clock } from '@svc/protocol';
import type { DeletionJobStore, UserErasureStore } from '@svc/storage';

/** Default bound from a deletion job's `completedAt` to its `purgedAt` (SVC_ERASURE_MAX_DELAY_S). */
export const DEFAULT_ERASURE_MAX_DELAY_S = 3600;
/**
 * The purge runs when the oldest job waiting for it has used this share of the bound: one
 * rewrite then serves every job completed meanwhile, and the rewrite itself has the rest.
 */
const PURGE_AT_SHARE = 0.5;
/** After a failed purge (e.g. a full disk), the next try waits this long at most. */
const RETRY_DELAY_MAX_MS = 60_000;

export interface ErasurePurgeObserver {
  /** A purge removed the bytes of `jobs` jobs' erasures in `durationMs`. */
  purged(jobs: number, durationMs: number): void;
  failed(error: unknown): void;
}

/**
 * Physical purging of erased data, batched across deletion jobs. A deletion job removes the
 * user's rows at once (`completedAt`), but the database keeps their bytes in freed blocks;
 * this rewrites the database files (UserErasureStore.rewriteErased) within `maxDelayMs` of the
 * oldest job's completion, and sets `purgedAt` on the jobs it served: those completed before the
 * rewrite began, whose rows were therefore gone from the files it copied.
 */
export class ErasurePurger {
  private timer: NodeJS.Timeout | null = null;
  private dueAt = Number.POSITIVE_INFINITY;
  private running: Promise<number> | null = null;
  private stopped = false;

  constructor(
    private readonly jobs: Pick<DeletionJobStore, 'oldestUnpurged' | 'listUnpurged' | 'markPurged'>,
    private readonly erasure: Pick<UserErasureStore, 'rewriteErased'>,
    /** Bound from a job's completion to its purge, ms; default `DEFAULT_ERASURE_MAX_DELAY_S` seconds. */
    private readonly maxDelayMs: number = DEFAULT_ERASURE_MAX_DELAY_S * 1000,
    private readonly clock: Clock = systemClock,
    private observer: ErasurePurgeObserver = { purged: () => {}, failed: () => {} },
    /** Where completed erasures are followed (`user.erased` plans their purge); none by default. */
    bus: Bus | null = null,
  ) {
    bus?.subscribe('user.erased', () => this.schedule());
  }

  /** Plans the purge of the jobs already waiting (e.g. after a restart); reports go to `observer` from then on. */
  start(observer?: ErasurePurgeObserver): Promise<void> {
    if (observer) this.observer = observer;
    return this.schedule();
  }

  /** Plans the next purge from the jobs waiting for one (call at start and after each job). */
  async schedule(): Promise<void> {
    if (this.stopped) return;
    const oldest = await this.jobs.oldestUnpurged();
    if (oldest === null) return;
    this.planAt(oldest + this.maxDelayMs * PURGE_AT_SHARE);
  }

  /** Purges now; concurrent calls share the purge under way. Resolves with the jobs served. */
  runOnce(): Promise<number> {
    this.running ??= this.purge().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  private async purge(): Promise<number> {
    const started = this.clock.now();
    // Listed before the rewrite: a job completed during it may still have bytes in the new files.
    const ids = await this.jobs.listUnpurged();
    if (!ids.length) return 0;
    await this.erasure.rewriteErased();
    await this.jobs.markPurged(ids, this.clock.now());
    this.observer.purged(ids.length, this.clock.now() - started);
    return ids.length;
  }

  private planAt(dueAt: number): void {
    if (this.stopped || (this.timer && dueAt >= this.dueAt)) return;
    if (this.timer) clearTimeout(this.timer);
    this.dueAt = dueAt;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.dueAt = Number.POSITIVE_INFINITY;
      void this.runOnce().then(
        // Jobs that completed during the purge wait for the next one.
        () => this.schedule(),
        (error: unknown) => {
          this.observer.failed(error);
          this.planAt(this.clock.now() + Math.min(RETRY_DELAY_MAX_MS, this.maxDelayMs / 4));
        },
      ).catch((error: unknown) => this.observer.failed(error));
    }, Math.max(0, dueAt - this.clock.now()));
    this.timer.unref();
  }
}
