import type { DeletionJob, ErasedCounts } from './deletion-job-store';

/**
 * Erasure of a user's data on the event side (events, quarantined rejects, webhook deliveries,
 * rollups), where the events live; the jobs are DeletionJobStore's.
 */
export interface UserErasureStore {
  /**
   * Deletes the user's rows in one transaction and returns how many events and rejects went.
   * Idempotent: running it again deletes nothing more (only rows stored since).
   *
   * `userId` is the user's id in clear while the request that made the job is still in memory
   * (it is never stored): rows are then matched by plain equality instead of hashing every row
   * of the tenant, which is what a job resumed after a restart has to do.
   */
  erase(job: Pick<DeletionJob, 'tenantSeq' | 'userHash'>, userId?: string): Promise<ErasedCounts>;
  /**
   * Rewrites the files so that none holds the bytes of rows erased before the call began
   * (deleted rows leave their bytes in freed blocks until then).
   */
  rewriteErased(): Promise<void>;
}
