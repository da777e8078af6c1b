import { listValue } from '@duckdb/node-api';
import { hashUserId, type DeletionJob, type DeletionJobStore, type DeletionStatus, type ErasedCounts } from '../deletion-job-store';
import type { UserErasureStore } from '../user-erasure-store';
import { deleteUserRollups } from './analytics-rollups';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { nullableNumber } from './row-values';
import { UNDECODABLE_EVENTS_TABLE } from './undecodable-events';

const JOB_COLUMNS = `id, tenant_seq, user_hash, status, epoch_ms(requested_at) AS requested_at_ms,
  epoch_ms(completed_at) AS completed_at_ms, epoch_ms(purged_at) AS purged_at_ms, deleted_events, deleted_rejects, error`;

interface Lease {
  nodeId: string;
  expiresAt: number;
}

/**
 * Deletion jobs and the erasure of users' data in the embedded database; erasure matches rows
 * by the hash of their userId. Only one process opens the file, so leases live in its memory:
 * a job left running by an earlier process holds no lease and is claimed at once.
 */
export class DuckDbDeletionStore implements DeletionJobStore, UserErasureStore {
  private readonly leases = new Map<string, Lease>();

  constructor(private readonly db: DuckDbDatabase) {}

  async create(job: DeletionJob): Promise<void> {
    await this.db.write((c) =>
      c.run(
        `INSERT INTO deletion_jobs (id, tenant_seq, user_hash, status, requested_at) VALUES ($1, $2, $3, $4, epoch_ms($5::BIGINT))`,
        [job.id, job.tenantSeq, job.userHash, job.status, job.requestedAt],
      ),
    );
  }

  async get(tenantSeq: number, id: string): Promise<DeletionJob | null> {
    const rows = await this.db.query(`SELECT ${JOB_COLUMNS} FROM deletion_jobs WHERE tenant_seq = $1 AND id = $2`, [tenantSeq, id]);
    return rows[0] ? toJob(rows[0]) : null;
  }

  async findUnfinished(tenantSeq: number, userHash: string): Promise<DeletionJob | null> {
    const rows = await this.db.query(
      `SELECT ${JOB_COLUMNS} FROM deletion_jobs
       WHERE tenant_seq = $1 AND user_hash = $2 AND status IN ('pending', 'running') ORDER BY requested_at LIMIT 1`,
      [tenantSeq, userHash],
    );
    return rows[0] ? toJob(rows[0]) : null;
  }

  async listUnfinished(): Promise<DeletionJob[]> {
    const rows = await this.db.query(
      `SELECT ${JOB_COLUMNS} FROM deletion_jobs WHERE status IN ('pending', 'running') ORDER BY requested_at, id`,
    );
    return rows.map(toJob);
  }

  async listJobs(tenantSeq: number): Promise<DeletionJob[]> {
    const rows = await this.db.query(`SELECT ${JOB_COLUMNS} FROM deletion_jobs WHERE tenant_seq = $1 ORDER BY requested_at, id`, [tenantSeq]);
    return rows.map(toJob);
  }

  claimNext(nodeId: string, now: number, leaseMs: number): Promise<DeletionJob | null> {
    // Claims are writes: they take turns, so two never see the same job free.
    return this.db.write(async (c) => {
      const rows = await this.db.writeQuery(
        c,
        `SELECT id FROM deletion_jobs WHERE status IN ('pending', 'running') ORDER BY requested_at, id`,
      );
      const free = rows.map((row) => String(row.id)).find((id) => (this.leases.get(id)?.expiresAt ?? now) <= now);
      if (free === undefined) return null;
      const claimed = await this.db.writeQuery(c, `UPDATE deletion_jobs SET status = 'running' WHERE id = $1 RETURNING ${JOB_COLUMNS}`, [free]);
      this.leases.set(free, { nodeId, expiresAt: now + leaseMs });
      return toJob(claimed[0]!);
    });
  }

  async renewLease(id: string, nodeId: string, now: number, leaseMs: number): Promise<boolean> {
    const lease = this.leases.get(id);
    if (lease?.nodeId !== nodeId) return false;
    lease.expiresAt = now + leaseMs;
    return true;
  }

  async releaseLease(id: string, nodeId: string): Promise<void> {
    if (this.leases.get(id)?.nodeId !== nodeId) return;
    await this.db.write((c) => c.run(`UPDATE deletion_jobs SET status = 'pending' WHERE id = $1 AND status = 'running'`, [id]));
    this.leases.delete(id);
  }

  async markCompleted(id: string, completedAt: number, counts: ErasedCounts): Promise<DeletionJob> {
    const rows = await this.db.write((c) =>
      this.db.writeQuery(
        c,
        `UPDATE deletion_jobs SET status = 'completed', completed_at = epoch_ms($2::BIGINT), deleted_events = $3,
           deleted_rejects = $4, error = NULL
         WHERE id = $1 AND status <> 'completed' RETURNING ${JOB_COLUMNS}`,
        [id, completedAt, counts.deletedEvents, counts.deletedRejects],
      ),
    );
    this.leases.delete(id);
    if (rows[0]) return toJob(rows[0]);
    const done = await this.db.query(`SELECT ${JOB_COLUMNS} FROM deletion_jobs WHERE id = $1`, [id]);
    if (!done[0]) throw new Error(`deletion job ${id} does not exist`);
    return toJob(done[0]);
  }

  erase(job: Pick<DeletionJob, 'tenantSeq' | 'userHash'>, userId?: string): Promise<ErasedCounts> {
    // Without the id in clear, sha256() over the user column finds the rows by their hash.
    const clear = userId !== undefined && hashUserId(userId) === job.userHash;
    const match = clear ? 'tenant_seq = $1 AND user_id = $2' : 'tenant_seq = $1 AND user_id IS NOT NULL AND sha256(user_id) = $2';
    const values = [job.tenantSeq, clear ? userId : job.userHash];
    return this.db.rollups.transaction(async (c) => {
      const events = await c.run(`DELETE FROM events WHERE ${match}`, values);
      const rejects = await c.run(`DELETE FROM rejected_events WHERE ${match}`, values);
      await deleteUserRollups(c, match, values);
      await c.run(`DELETE FROM ${UNDECODABLE_EVENTS_TABLE} WHERE ${match}`, values);
      // Deliveries go too (their payloads hold the events): pending ones are never sent, since
      // the dispatcher checks a delivery is still pending first, and logged ones cannot be replayed.
      await c.run(`DELETE FROM webhook_deliveries WHERE ${match}`, values);
      return { deletedEvents: Number(events.rowsChanged), deletedRejects: Number(rejects.rowsChanged) };
    });
  }

  async oldestUnpurged(): Promise<number | null> {
    const rows = await this.db.query(
      `SELECT epoch_ms(min(completed_at)) AS oldest FROM deletion_jobs WHERE status = 'completed' AND purged_at IS NULL`,
    );
    return nullableNumber(rows[0]?.oldest);
  }

  async listUnpurged(): Promise<string[]> {
    const rows = await this.db.query(`SELECT id FROM deletion_jobs WHERE status = 'completed' AND purged_at IS NULL ORDER BY id`);
    return rows.map((row) => String(row.id));
  }

  rewriteErased(): Promise<void> {
    return this.db.rewrite();
  }

  async markPurged(ids: string[], purgedAt: number): Promise<void> {
    if (!ids.length) return;
    await this.db.write((c) =>
      c.run(`UPDATE deletion_jobs SET purged_at = epoch_ms($1::BIGINT) WHERE list_contains($2::VARCHAR[], id)`, [purgedAt, listValue(ids)]),
    );
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.db.write((c) => c.run(`UPDATE deletion_jobs SET status = 'failed', error = $2 WHERE id = $1`, [id, error.slice(0, 500)]));
    this.leases.delete(id);
  }
}

function toJob(row: Row): DeletionJob {
  return {
    id: String(row.id),
    tenantSeq: Number(row.tenant_seq),
    userHash: String(row.user_hash),
    status: String(row.status) as DeletionStatus,
    requestedAt: Number(row.requested_at_ms),
    completedAt: nullableNumber(row.completed_at_ms),
    purgedAt: nullableNumber(row.purged_at_ms),
    deletedEvents: nullableNumber(row.deleted_events),
    deletedRejects: nullableNumber(row.deleted_rejects),
    error: row.error === null ? null : String(row.error),
  };
}
