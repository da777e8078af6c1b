import { randomBytes } from 'node:crypto';
import { randomBase62, SvcError, systemClock, type Bus, type Clock, type ErasureNotice } from '@svc/protocol';
import { hashUserId, type DeletionJob, type DeletionJobStore, type Tenant, type UserErasureStore } from '@svc/storage';

export type RandomBytes = (size: number) => Uint8Array;

/** How long a job the disk refused waits before it is tried again. */
export const STORAGE_RETRY_DELAY_MS = 30_000;
/**
 * How long a node's claim on a job lasts unless renewed (renewed every third of it while the
 * job runs): a job whose node died is resumed by another node this long after its last renewal.
 */
export const DEFAULT_DELETION_LEASE_MS = 60_000;

export interface DeletionLease {
  /** This node's name on the leases it takes; default a random one per process. */
  nodeId?: string;
  /** Default `DEFAULT_DELETION_LEASE_MS`. */
  leaseMs?: number;
}

/**
 * Per-user deletion as asynchronous jobs: a request is recorded (with only a hash of the
 * userId) and answered at once; a worker erases the user's data, one job at a time. A repeated
 * request while a job for the same user is unfinished returns that job. A job the disk refused
 * (`storage_unavailable`) goes back to pending and is tried again after `retryDelayMs`; other
 * failures mark it failed.
 *
 * Several nodes may share the jobs: the worker runs a job only under a lease it claimed
 * (`DeletionJobStore.claimNext`), and looks once per lease period for jobs whose node died.
 * Erasure and completion are two steps, in two stores: the job is claimed, its data erased,
 * then it is marked completed. A crash in between leaves it running under a lease that expires;
 * the node that claims it next erases again, which deletes nothing more (erasure is
 * idempotent), and marks it completed, with the counts of that last run.
 */
export class DeletionService {
  private working: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private readonly nodeId: string;
  private readonly leaseMs: number;
  /**
   * The userId of each job requested by this process and not yet run, by job id. Only in
   * memory: it lets the job match rows by equality; a job resumed after a restart has only the hash.
   */
  private readonly clearIds = new Map<string, string>();

  constructor(
    private readonly store: DeletionJobStore,
    private readonly erasure: UserErasureStore,
    private readonly clock: Clock = systemClock,
    private readonly random: RandomBytes = randomBytes,
    private onError: (error: unknown, job: DeletionJob | null) => void = () => {},
    private readonly retryDelayMs: number = STORAGE_RETRY_DELAY_MS,
    lease: DeletionLease = {},
    /**
     * Where each job is announced around its erasure: `user.erasing` just before (the erasure
     * waits for this node's subscribers, e.g. writes of the user's data under way; a failure
     * fails the job), `user.erased` after (failures go to `onError`). None by default.
     */
    private readonly bus: Bus | null = null,
  ) {
    this.nodeId = lease.nodeId ?? `node_${randomBase62(16, random)}`;
    this.leaseMs = lease.leaseMs ?? DEFAULT_DELETION_LEASE_MS;
  }

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

  /**
   * Picks up jobs left unfinished by an earlier process, then looks for unclaimed jobs once per
   * lease period (those of a node that died); failures of jobs go to `onError` from then on.
   */
  start(onError?: (error: unknown, job: DeletionJob | null) => void): void {
    if (onError) this.onError = onError;
    if (!this.sweepTimer && !this.stopped) {
      this.sweepTimer = setInterval(() => this.kick(), this.leaseMs);
      this.sweepTimer.unref();
    }
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
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
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
    while (!this.stopped) {
      const job = await this.store.claimNext(this.nodeId, this.clock.now(), this.leaseMs);
      if (!job) return;
      if (!(await this.run(job))) return;
    }
  }

  /** Runs one claimed job; false when the disk refused it and the worker should pause. */
  private async run(job: DeletionJob): Promise<boolean> {
    // A lease found lost (this node paused past its expiry) does not stop the job: another node
    // may be erasing the same user too, which erasure being idempotent makes harmless.
    const renewal = setInterval(() => {
      this.store.renewLease(job.id, this.nodeId, this.clock.now(), this.leaseMs).catch((error: unknown) => this.onError(error, job));
    }, this.leaseMs / 3);
    renewal.unref();
    try {
      const userId = this.clearIds.get(job.id);
      await this.bus?.publish('user.erasing', erasureNotice(job, userId));
      const counts = await this.erasure.erase(job, userId);
      // Not one transaction with the erasure (the job may live in another database): a crash
      // here leaves the job running; it is claimed again once its lease expires and its second
      // erasure finds nothing more to delete.
      const done = await this.store.markCompleted(job.id, this.clock.now(), counts);
      this.clearIds.delete(job.id);
      await this.bus?.publish('user.erased', erasureNotice(done, undefined)).catch((error: unknown) => this.onError(error, job));
      return true;
    } catch (error) {
      this.onError(error, job);
      // A disk that refuses writes is passing trouble, not a reason to give up on an erasure:
      // the job goes back to pending and runs again a little later (or at the next request or
      // start). If even that is refused, its lease runs out and it is claimed again then.
      if (error instanceof SvcError && error.code === 'storage_unavailable') {
        await this.store.releaseLease(job.id, this.nodeId).catch(() => undefined);
        this.retryLater();
        return false;
      }
      this.clearIds.delete(job.id);
      await this.store.markFailed(job.id, error instanceof Error ? error.message : String(error));
      return true;
    } finally {
      clearInterval(renewal);
    }
  }
}

/** What the bus carries of a job: `userId` only while this process knows it. */
function erasureNotice(job: DeletionJob, userId: string | undefined): ErasureNotice {
  return { jobId: job.id, tenantSeq: job.tenantSeq, userHash: job.userHash, userId: userId ?? null };
}
