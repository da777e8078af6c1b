import { randomBytes } from 'node:crypto';
import { randomBase62, SvcError, systemClock, type Clock } from '@svc/protocol';
import { hashUserId, type DeletionJob, type DeletionStore, type Tenant } from '@svc/storage';

export type RandomBytes = (size: number) => Uint8Array;

/** Told about each job around the erasure (e.g. the webhook queue forgets the user's deliveries). */
export interface ErasureListener {
  /**
   * Just before the store erases the user's data; `userId` is known to jobs requested by this
   * process. The erasure waits for a returned promise (e.g. writes of the user's data under way).
   */
  erasing(job: DeletionJob, userId: string | undefined): void | Promise<void>;
  /** After the store erased it. */
  erased(job: DeletionJob): Promise<void>;
}

/** How long a job the disk refused waits before it is tried again. */
export const STORAGE_RETRY_DELAY_MS = 30_000;

/**
 * Per-user deletion as asynchronous jobs: a request is recorded (with only a hash of the
 * userId) and answered at once; a worker in this process erases the user's data, one job at
 * a time, and resumes unfinished jobs after a restart. A repeated request while a job for the
 * same user is unfinished returns that job. A job the disk refused (`storage_unavailable`) stays
 * pending and is tried again after `retryDelayMs`; other failures mark it failed.
 */
export class DeletionService {
  private working: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  /**
   * The userId of each job requested by this process and not yet run, by job id. Only in
   * memory: it lets the job match rows by equality; a job resumed after a restart has only the hash.
   */
  private readonly clearIds = new Map<string, string>();
  private readonly listeners: ErasureListener[] = [];

  constructor(
    private readonly store: DeletionStore,
    private readonly clock: Clock = systemClock,
    private readonly random: RandomBytes = randomBytes,
    private onError: (error: unknown, job: DeletionJob | null) => void = () => {},
    private readonly retryDelayMs: number = STORAGE_RETRY_DELAY_MS,
  ) {}

  async request(tenant: Tenant, userId: string): Promise<DeletionJob> {
    const userHash = hashUserId(userId);
    const existing = await this.store.findUnfinished(tenant.seq, userHash);
    if (existing) {
      this.clearIds.set(existing.id, userId);
      return existing;
    }
    const job: DeletionJob = {
      id: `del_${randomBase62(20, this.random)}`,
      tenantSeq: tenant.seq,
      userHash,
      status: 'pending',
      requestedAt: this.clock.now(),
      completedAt: null,
      purgedAt: null,
      deletedEvents: null,
      deletedRejects: null,
      error: null,
    };
    await this.store.create(job);
    this.clearIds.set(job.id, userId);
    this.kick();
    return job;
  }

  async get(tenant: Tenant, id: string): Promise<DeletionJob> {
    const job = await this.store.get(tenant.seq, id);
    if (!job) throw new SvcError('not_found', `No deletion job "${id}".`);
    return job;
  }

  addListener(listener: ErasureListener): void {
    this.listeners.push(listener);
  }

  /** Picks up jobs left unfinished by an earlier process; failures of jobs go to `onError` from then on. */
  start(onError?: (error: unknown, job: DeletionJob | null) => void): void {
    if (onError) this.onError = onError;
    this.kick();
  }

  /** Resolves when no job is waiting (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.working) await this.working;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.idle();
  }

  private kick(): void {
    if (this.stopped) return;
    if (this.working) {
      this.again = true;
      return;
    }
    this.working = this.work().catch((error: unknown) => this.onError(error, null)).finally(() => {
      this.working = null;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  private retryLater(): void {
    if (this.retryTimer || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.kick();
    }, this.retryDelayMs);
    this.retryTimer.unref();
  }

  private async work(): Promise<void> {
    for (const job of await this.store.listUnfinished()) {
      if (this.stopped) return;
      try {
        const userId = this.clearIds.get(job.id);
        for (const listener of this.listeners) await listener.erasing(job, userId);
        const done = await this.store.execute(job, this.clock.now(), userId);
        this.clearIds.delete(job.id);
        for (const listener of this.listeners) await listener.erased(done).catch((error: unknown) => this.onError(error, job));
      } catch (error) {
        this.onError(error, job);
        // A disk that refuses writes is passing trouble, not a reason to give up on an erasure:
        // the job stays pending and runs again a little later (or at the next request or start).
        if (error instanceof SvcError && error.code === 'storage_unavailable') {
          this.retryLater();
          return;
        }
        this.clearIds.delete(job.id);
        await this.store.markFailed(job.id, error instanceof Error ? error.message : String(error));
      }
    }
  }
}
