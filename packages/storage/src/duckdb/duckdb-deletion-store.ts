import { listValue } from '@duckdb/node-api';
import { hashUserId, type DeletionJob, type DeletionStatus, type DeletionStore } from '../deletion-store';
import { deleteUserRollups } from './analytics-rollups';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { nullableNumber } from './row-values';
import { UNDECODABLE_EVENTS_TABLE } from './undecodable-events';

const JOB_COLUMNS = `id, tenant_seq, user_hash, status, epoch_ms(requested_at) AS requested_at_ms,
  epoch_ms(completed_at) AS completed_at_ms, epoch_ms(purged_at) AS purged_at_ms, deleted_events, deleted_rejects, error`;

/** Deletion jobs in the embedded database; erasure matches rows by the hash of their userId. */
export class DuckDbDeletionStore implements DeletionStore {
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

  execute(job: DeletionJob, completedAt: number, userId?: string): Promise<DeletionJob> {
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
      const rows = await this.db.writeQuery(
        c,
        `UPDATE deletion_jobs SET status = 'completed', completed_at = epoch_ms($2::BIGINT), deleted_events = $3,
           deleted_rejects = $4, error = NULL
         WHERE id = $1 RETURNING ${JOB_COLUMNS}`,
        [job.id, completedAt, Number(events.rowsChanged), Number(rejects.rowsChanged)],
      );
      return toJob(rows[0]!);
    });
  }

  async oldestUnpurged(): Promise<number | null> {
    const rows = await this.db.query(
      `SELECT epoch_ms(min(completed_at)) AS oldest FROM deletion_jobs WHERE status = 'completed' AND purged_at IS NULL`,
    );
    return nullableNumber(rows[0]?.oldest);
  }

  async purge(now: () => number): Promise<number> {
    const rows = await this.db.query(`SELECT id FROM deletion_jobs WHERE status = 'completed' AND purged_at IS NULL`);
    const ids = rows.map((row) => String(row.id));
    if (!ids.length) return 0;
    // Every job listed completed before the rewrite began: its rows are in neither new file.
    await this.db.rewrite();
    await this.db.write((c) =>
      c.run(`UPDATE deletion_jobs SET purged_at = epoch_ms($1::BIGINT) WHERE list_contains($2::VARCHAR[], id)`, [now(), listValue(ids)]),
    );
    return ids.length;
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.db.write((c) => c.run(`UPDATE deletion_jobs SET status = 'failed', error = $2 WHERE id = $1`, [id, error.slice(0, 500)]));
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
