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

/** What one erasure removed (UserErasureStore.erase). */
export interface ErasedCounts {
  deletedEvents: number;
  deletedRejects: number;
}

/** What a deletion job keeps of a userId: its hex SHA-256. */
export function hashUserId(userId: string): string {
  return createHash('sha256').update(userId).digest('hex');
}

/**
 * The deletion jobs themselves (metadata, shared by every node). The erasure of the user's data
 * is UserErasureStore's; a job is marked completed only after its erasure, which is idempotent,
 * so a crash in between makes the job run again and delete nothing more.
 *
 * Leases: a node runs a job only while it holds the job's lease (`claimNext`), renews it while
 * the job runs and gives it back if it stops early; a job whose node died is claimed by another
 * once its lease has expired. Lease times come from the callers' clocks: `leaseMs` must exceed
 * the clock skew between nodes by far.
 */
export interface DeletionJobStore {
  create(job: DeletionJob): Promise<void>;
  get(tenantSeq: number, id: string): Promise<DeletionJob | null>;
  /** A pending or running job of the same user, if one exists. */
  findUnfinished(tenantSeq: number, userHash: string): Promise<DeletionJob | null>;
  /** Every pending or running job, oldest first. */
  listUnfinished(): Promise<DeletionJob[]>;
  /** Every job of the tenant, whatever its status, oldest first (ids in byte order at equal times). */
  listJobs(tenantSeq: number): Promise<DeletionJob[]>;
  /**
   * Takes the oldest job that is pending, or running under a lease expired at `now`, for
   * `nodeId` until `now + leaseMs` and marks it running; null if there is none. Two nodes
   * claiming at the same moment never get the same job; completed and failed jobs are never claimed.
   */
  claimNext(nodeId: string, now: number, leaseMs: number): Promise<DeletionJob | null>;
  /** Extends `nodeId`'s lease on a running job to `now + leaseMs`; false if the node no longer holds it. */
  renewLease(id: string, nodeId: string, now: number, leaseMs: number): Promise<boolean>;
  /** Gives back `nodeId`'s lease: the running job is pending again, for any node to claim. */
  releaseLease(id: string, nodeId: string): Promise<void>;
  /** Marks the job completed with what its erasure removed; a job already completed keeps its first completion. */
  markCompleted(id: string, completedAt: number, counts: ErasedCounts): Promise<DeletionJob>;
  markFailed(id: string, error: string): Promise<void>;
  /** `completedAt` of the oldest completed job whose bytes are not purged yet; null if none. */
  oldestUnpurged(): Promise<number | null>;
  /** Ids of the completed jobs whose bytes are not purged yet. */
  listUnpurged(): Promise<string[]>;
  /** Sets `purgedAt` on the jobs `ids` (once the files hold none of their bytes). */
  markPurged(ids: string[], purgedAt: number): Promise<void>;
}
