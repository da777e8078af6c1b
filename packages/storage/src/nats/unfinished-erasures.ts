import { systemClock, type Clock } from '@svc/protocol';
import { hashUserId, type DeletionJobStore } from '../deletion-job-store';
import type { ErasingUserCheck } from './erasing-users';

/** How long the list of unfinished deletion jobs is used before it is read again. */
export const UNFINISHED_ERASURES_MAX_AGE_MS = 1_000;

/**
 * The writer's `isErasing` from the deletion jobs not yet completed (pending or running): a
 * user with such a job has their rows dropped. The list is read at most once per
 * `maxAgeMs` (one query for a whole batch); a job created since is seen by the next read. That
 * is enough because a deletion job also waits until the writer has passed the stream position
 * of its start (EventLog.waitUntilPassed): dropping only spares ClickHouse rows it would delete.
 */
export class UnfinishedErasures {
  private users: Set<string> | null = null;
  private readAt = 0;
  private reading: Promise<Set<string>> | null = null;

  constructor(
    private readonly jobs: Pick<DeletionJobStore, 'listUnfinished'>,
    /** Default UNFINISHED_ERASURES_MAX_AGE_MS. */
    private readonly maxAgeMs = UNFINISHED_ERASURES_MAX_AGE_MS,
    private readonly clock: Clock = systemClock,
  ) {}

  /** The predicate to hand to EventLogWriter as `isErasing`. */
  readonly check: ErasingUserCheck = async (tenantSeq, userId) => {
    const users = await this.current();
    // Nobody being erased is the common case: no hashing then.
    return users.size > 0 && users.has(`${tenantSeq}:${hashUserId(userId)}`);
  };

  private async current(): Promise<Set<string>> {
    if (this.users && this.clock.now() - this.readAt < this.maxAgeMs) return this.users;
    this.reading ??= this.read().finally(() => (this.reading = null));
    return this.reading;
  }

  private async read(): Promise<Set<string>> {
    const startedAt = this.clock.now();
    const jobs = await this.jobs.listUnfinished();
    this.users = new Set(jobs.map((job) => `${job.tenantSeq}:${job.userHash}`));
    this.readAt = startedAt;
    return this.users;
  }
}
