export type DeletionStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface DeletionJob {
  id: string;
  tenantSeq: number;
  /** Hex SHA-256 of the userId; the userId itself is not kept. */
  userHash: string;
  status: DeletionStatus;
  requestedAt: number;
  completedAt: number | null;
  deletedEvents: number | null;
  deletedRejects: number | null;
  error: string | null;
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
  execute(job: DeletionJob, completedAt: number): Promise<DeletionJob>;
  markFailed(id: string, error: string): Promise<void>;
}
