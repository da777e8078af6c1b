import type { DeletionJob, DeletionJobStore, DeletionStatus, ErasedCounts } from '../deletion-job-store';
import type { PgDatabase } from './pg-database';

interface JobRow {
  id: string;
  tenant_seq: number;
  user_hash: string;
  status: string;
  requested_at: Date;
  completed_at: Date | null;
  purged_at: Date | null;
  deleted_events: string | null;
  deleted_rejects: string | null;
  error: string | null;
}

/**
 * Deletion jobs in PostgreSQL, shared by every node. A node claims a job with a lease taken
 * under `FOR UPDATE SKIP LOCKED`: nodes claiming at the same moment each lock a different row,
 * and a job whose node died is claimed by another once its lease has expired.
 */
export class PgDeletionJobStore implements DeletionJobStore {
  constructor(private readonly db: PgDatabase) {}

  async create(job: DeletionJob): Promise<void> {
    await this.db.run(
      (sql) => sql`
        INSERT INTO deletion_jobs (id, tenant_seq, user_hash, status, requested_at)
        VALUES (${job.id}, ${job.tenantSeq}, ${job.userHash}, ${job.status}, ${new Date(job.requestedAt)})`,
    );
  }

  async get(tenantSeq: number, id: string): Promise<DeletionJob | null> {
    const [row] = await this.db.run((sql) => sql<JobRow[]>`SELECT * FROM deletion_jobs WHERE tenant_seq = ${tenantSeq} AND id = ${id}`);
    return row ? toJob(row) : null;
  }

  async findUnfinished(tenantSeq: number, userHash: string): Promise<DeletionJob | null> {
    const [row] = await this.db.run(
      (sql) => sql<JobRow[]>`
        SELECT * FROM deletion_jobs
        WHERE tenant_seq = ${tenantSeq} AND user_hash = ${userHash} AND status IN ('pending', 'running')
        ORDER BY requested_at, id COLLATE "C" LIMIT 1`,
    );
    return row ? toJob(row) : null;
  }

  async listUnfinished(): Promise<DeletionJob[]> {
    const rows = await this.db.run(
      (sql) => sql<JobRow[]>`SELECT * FROM deletion_jobs WHERE status IN ('pending', 'running') ORDER BY requested_at, id COLLATE "C"`,
    );
    return rows.map(toJob);
  }

  async listJobs(tenantSeq: number): Promise<DeletionJob[]> {
    const rows = await this.db.run(
      (sql) => sql<JobRow[]>`SELECT * FROM deletion_jobs WHERE tenant_seq = ${tenantSeq} ORDER BY requested_at, id COLLATE "C"`,
    );
    return rows.map(toJob);
  }

  async claimNext(nodeId: string, now: number, leaseMs: number): Promise<DeletionJob | null> {
    // SKIP LOCKED passes over a row another node is claiming; a row it claimed meanwhile is
    // checked again against the condition once its lock is gone, and skipped if now leased.
    const [row] = await this.db.run(
      (sql) => sql<JobRow[]>`
        UPDATE deletion_jobs SET status = 'running', lease_owner = ${nodeId}, lease_expires_at = ${new Date(now + leaseMs)}
        WHERE id = (
          SELECT id FROM deletion_jobs
          WHERE status = 'pending'
             OR (status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= ${new Date(now)}))
          ORDER BY requested_at, id COLLATE "C"
          LIMIT 1
          FOR UPDATE SKIP LOCKED
        )
        RETURNING *`,
    );
    return row ? toJob(row) : null;
  }

  async renewLease(id: string, nodeId: string, now: number, leaseMs: number): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
        UPDATE deletion_jobs SET lease_expires_at = ${new Date(now + leaseMs)}
        WHERE id = ${id} AND status = 'running' AND lease_owner = ${nodeId}
        RETURNING id`,
    );
    return rows.length > 0;
  }

  async releaseLease(id: string, nodeId: string): Promise<void> {
    await this.db.run(
      (sql) => sql`
        UPDATE deletion_jobs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${id} AND status = 'running' AND lease_owner = ${nodeId}`,
    );
  }

  async markCompleted(id: string, completedAt: number, counts: ErasedCounts): Promise<DeletionJob> {
    const [row] = await this.db.run(
      (sql) => sql<JobRow[]>`
        UPDATE deletion_jobs SET status = 'completed', completed_at = ${new Date(completedAt)},
          deleted_events = ${counts.deletedEvents}, deleted_rejects = ${counts.deletedRejects}, error = NULL,
          lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${id} AND status <> 'completed'
        RETURNING *`,
    );
    if (row) return toJob(row);
    const [done] = await this.db.run((sql) => sql<JobRow[]>`SELECT * FROM deletion_jobs WHERE id = ${id}`);
    if (!done) throw new Error(`deletion job ${id} does not exist`);
    return toJob(done);
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.db.run(
      (sql) => sql`
        UPDATE deletion_jobs SET status = 'failed', error = ${error.slice(0, 500)}, lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${id}`,
    );
  }

  async oldestUnpurged(): Promise<number | null> {
    const [row] = await this.db.run(
      (sql) => sql<{ oldest: Date | null }[]>`
        SELECT min(completed_at) AS oldest FROM deletion_jobs WHERE status = 'completed' AND purged_at IS NULL`,
    );
    return row?.oldest?.getTime() ?? null;
  }

  async listUnpurged(): Promise<string[]> {
    const rows = await this.db.run(
      (sql) => sql<{ id: string }[]>`
        SELECT id FROM deletion_jobs WHERE status = 'completed' AND purged_at IS NULL ORDER BY id COLLATE "C"`,
    );
    return rows.map((row) => row.id);
  }

  async markPurged(ids: string[], purgedAt: number): Promise<void> {
    if (!ids.length) return;
    await this.db.run((sql) => sql`UPDATE deletion_jobs SET purged_at = ${new Date(purgedAt)} WHERE id = ANY(${ids}::text[])`);
  }
}

function toJob(row: JobRow): DeletionJob {
  return {
    id: row.id,
    tenantSeq: row.tenant_seq,
    userHash: row.user_hash,
    status: row.status as DeletionStatus,
    requestedAt: row.requested_at.getTime(),
    completedAt: row.completed_at?.getTime() ?? null,
    purgedAt: row.purged_at?.getTime() ?? null,
    deletedEvents: row.deleted_events === null ? null : Number(row.deleted_events),
    deletedRejects: row.deleted_rejects === null ? null : Number(row.deleted_rejects),
    error: row.error,
  };
}
