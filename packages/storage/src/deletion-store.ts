import { createHash } from 'node:crypto';
export type DeletionStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface DeletionJob {
  id: string;
  tenantSeq: number;
  /** Hex SHA-256 of the userId; the userId itself is not kept. */
  userHash: string;
  status: DeletionStatus;
  requestedAt: number;
  completedAt: number | null;
  /**
   * When no byte of the user's erased data was left in any file of the database (the logical
   * erasure at `completedAt` frees the rows; a later rewrite of the files removes the bytes).
   */
  purgedAt: number | null;
  deletedEvents: number | null;
  deletedRejects: number | null;
  error: string | null;
}

/** What a deletion job keeps of a userId: its hex SHA-256. */
export function hashUserId(userId: string): string {
  return createHash('sha256').update(userId).digest('hex');
}

/**
 * Per-user erasure. `execute` removes the user's events, quarantined rejects (and, once there
 * is one, pending webhook deliveries) and marks the job completed in one transaction, so a
 * crash leaves either nothing done or everything done.
 */
export interface DeletionStore {
  create(job: DeletionJob): Promise<void>;
  get(tenantSeq: number, id: string): Promise<DeletionJob | null>;
  /** A pending or running job of the same user, if one exists. */
  findUnfinished(tenantSeq: number, userHash: string): Promise<DeletionJob | null>;
  /** Every pending or running job, oldest first (resumed after a restart). */
  listUnfinished(): Promise<DeletionJob[]>;
  /**
   * `userId` is the user's id in clear while the request that made the job is still in memory
   * (it is never stored): rows are then matched by plain equality instead of hashing every row
   * of the tenant, which is what a job resumed after a restart has to do.
   */
  execute(job: DeletionJob, completedAt: number, userId?: string): Promise<DeletionJob>;
  markFailed(id: string, error: string): Promise<void>;
  /** `completedAt` of the oldest completed job whose bytes are not purged yet; null if none. */
  oldestUnpurged(): Promise<number | null>;
  /**
   * Removes from every file the bytes of everything erased so far and sets `purgedAt` (from
   * `now`, read once the files are clean) on every completed job not purged yet; returns how many.
   */
  purge(now: () => number): Promise<number>;
}
