import { systemClock, type Clock } from '@svc/protocol';
import { hashUserId, type DeletionJobStore } from '../deletion-job-store';
import type { ErasingSince } from './erasing-users';

/** How long the list of unfinished deletion jobs is used before it is read again. */
export const UNFINISHED_ERASURES_MAX_AGE_MS = 1_000;

/**
 * The writer's `erasingSince` from the deletion jobs not yet completed (pending or running): a
 * user with such a job has their rows received up to its request dropped. The list is read at most once per
 * `maxAgeMs` (one query for a whole batch); a job created since is seen by the next read. That
 * is enough because a deletion job also waits until the writer has passed the stream position
 * of its start (EventLog.waitUntilPassed): dropping only spares ClickHouse rows it would delete.
 */
export class UnfinishedErasures {
  /** `tenantSeq:userHash` → when the newest unfinished job of the user was requested. */
  private users: Map<string, number> | null = null;
  private readAt = 0;
  private reading: Promise<Map<string, number>> | null = null;

  constructor(
    private readonly jobs: Pick<DeletionJobStore, 'listUnfinished'>,
    /** Default UNFINISHED_ERASURES_MAX_AGE_MS. */
    private readonly maxAgeMs = UNFINISHED_ERASURES_MAX_AGE_MS,
    private readonly clock: Clock = systemClock,
  ) {}

  /** What to hand to EventLogWriter as `erasingSince`: when the user's unfinished job was requested, or null. */
  readonly since: ErasingSince = async (tenantSeq, userId) => {
    const users = await this.current();
    // Nobody being erased is the common case: no hashing then.
    if (!users.size) return null;
    return users.get(`${tenantSeq}:${hashUserId(userId)}`) ?? null;
  };

  private async current(): Promise<Map<string, number>> {
    if (this.users && this.clock.now() - this.readAt < this.maxAgeMs) return this.users;
    this.reading ??= this.read().finally(() => (this.reading = null));
    return this.reading;
  }

  private async read(): Promise<Map<string, number>> {
    const startedAt = this.clock.now();
    const jobs = await this.jobs.listUnfinished();
    const users = new Map<string, number>();
    for (const job of jobs) {
      const key = `${job.tenantSeq}:${job.userHash}`;
      users.set(key, Math.max(users.get(key) ?? job.requestedAt, job.requestedAt));
    }
    this.users = users;
    this.readAt = startedAt;
    return this.users;
  }
}
