import type { NewDelivery } from '../event-store';
import type { AttemptOutcome, DeliveryRecord, DeliveryStatus, WebhookDeliveryStore } from '../webhook-delivery-store';
import type { DeliveryAttemptLog, LoggedState, WebhookQueue } from '../webhook-queue';
import type { PgDatabase, PgTransaction } from './pg-database';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The newest row of delivery `d`: its current state. */
const LATEST = `LATERAL (SELECT * FROM webhook_attempts a WHERE a.delivery_id = d.id ORDER BY a.seq DESC LIMIT 1) l ON true`;
/** The current status of delivery `d`. */
const CURRENT_STATUS = `(SELECT a.status FROM webhook_attempts a WHERE a.delivery_id = d.id ORDER BY a.seq DESC LIMIT 1)`;
const RECORD_COLUMNS = `d.id::text AS id, d.tenant_seq, d.endpoint_id, d.event_id, d.event, d.user_id, d.payload, d.created_at,
  l.status, l.attempts, l.next_attempt_at, l.attempted_at, l.status_code, l.error, l.latency_ms,
  (SELECT max(x.attempted_at) FROM webhook_attempts x WHERE x.delivery_id = d.id AND x.status = 'delivered') AS delivered_at`;

interface RecordRow {
  id: string;
  tenant_seq: number;
  endpoint_id: string;
  event_id: string;
  event: string;
  user_id: string | null;
  payload: string;
  created_at: Date;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  attempted_at: Date | null;
  status_code: number | null;
  error: string | null;
  latency_ms: number | null;
  delivered_at: Date | null;
}

/**
 * The webhook delivery log of cluster mode, in PostgreSQL beside the endpoints: deliveries wait
 * in the shared `WebhookQueue`, and enter the log with their first outcome; attempts are
 * appended in batches (one transaction per batch), never updated. A replay appends a pending
 * row and queues the delivery again. Listing, replay and the 30-day purge work as with the
 * embedded outbox, except that a delivery still waiting for its first attempt is in the queue,
 * not yet in the log.
 */
export class PgWebhookDeliveryStore implements WebhookDeliveryStore, DeliveryAttemptLog {
  constructor(
    private readonly db: PgDatabase,
    private readonly queue: Pick<WebhookQueue, 'requeue'>,
  ) {}

  async appendAttempts(entries: Array<{ delivery: NewDelivery; outcome: AttemptOutcome }>): Promise<void> {
    if (!entries.length) return;
    const deliveries = entries.map((e) => e.delivery);
    await this.db.transaction(async (sql) => {
      await insertDeliveries(sql, deliveries);
      await appendRows(sql, entries.map((e) => ({ id: e.delivery.id, outcome: e.outcome })));
    });
  }

  async latestStates(ids: string[]): Promise<Map<string, LoggedState>> {
    const valid = ids.filter((id) => UUID.test(id));
    if (!valid.length) return new Map();
    const rows = await this.db.run(
      (sql) => sql<{ id: string; status: DeliveryStatus; attempts: number }[]>`
        SELECT DISTINCT ON (delivery_id) delivery_id::text AS id, status, attempts FROM webhook_attempts
        WHERE delivery_id = ANY(${valid}::uuid[]) ORDER BY delivery_id, seq DESC`,
    );
    return new Map(rows.map((r) => [r.id, { status: r.status, attempts: r.attempts }]));
  }

  async logDelivery(r: DeliveryRecord): Promise<void> {
    await this.db.transaction(async (sql) => {
      await insertDeliveries(sql, [r]);
      const outcome: AttemptOutcome = { status: r.status, attempts: r.attempts, nextAttemptAt: r.nextAttemptAt, attemptedAt: r.lastAttemptAt ?? r.createdAt, statusCode: r.lastStatusCode, error: r.lastError, latencyMs: r.lastLatencyMs };
      await appendRows(sql, [{ id: r.id, outcome }]);
    });
  }

  async listPending(): Promise<DeliveryRecord[]> {
    // Pending deliveries are the queue's: no dispatcher loads them from here.
    return [];
  }

  async getDelivery(tenantSeq: number, id: string): Promise<DeliveryRecord | null> {
    if (!UUID.test(id)) return null;
    const [row] = await this.db.run((sql) => sql<RecordRow[]>`
      SELECT ${sql.unsafe(RECORD_COLUMNS)} FROM webhook_deliveries d JOIN ${sql.unsafe(LATEST)}
      WHERE d.tenant_seq = ${tenantSeq} AND d.id = ${id}::uuid`);
    return row ? toRecord(row) : null;
  }

  async listDeliveries(
    tenantSeq: number,
    endpointId: string,
    options: { limit: number; status?: DeliveryStatus; before?: { createdAt: number; id: string } },
  ): Promise<DeliveryRecord[]> {
    const before = options.before && UUID.test(options.before.id) ? options.before : undefined;
    const rows = await this.db.run((sql) => sql<RecordRow[]>`
      SELECT ${sql.unsafe(RECORD_COLUMNS)} FROM webhook_deliveries d JOIN ${sql.unsafe(LATEST)}
      WHERE d.tenant_seq = ${tenantSeq} AND d.endpoint_id = ${endpointId}
        ${options.status ? sql`AND l.status = ${options.status}` : sql``}
        ${before ? sql`AND (d.created_at, d.id) < (${new Date(before.createdAt)}, ${before.id}::uuid)` : sql``}
      ORDER BY d.created_at DESC, d.id DESC LIMIT ${options.limit}`);
    return rows.map(toRecord);
  }

  async pendingAmong(ids: string[]): Promise<Set<string>> {
    const states = await this.latestStates(ids);
    return new Set([...states].filter(([, s]) => s.status === 'pending').map(([id]) => id));
  }

  async recordAttempts(attempts: Array<{ id: string; outcome: AttemptOutcome }>): Promise<void> {
    if (!attempts.length) return;
    await this.db.transaction((sql) => appendRows(sql, attempts));
  }

  async requeue(tenantSeq: number, endpointId: string, filter: { id?: string; failedSince?: number }, at: number): Promise<DeliveryRecord[]> {
    if (filter.id !== undefined && !UUID.test(filter.id)) return [];
    // Queued inside the transaction that logs the replay: a queue that cannot take it leaves the
    // log as it was (the request fails and can be made again).
    return this.db.transaction(async (sql) => {
      const ids = await sql<{ id: string }[]>`
        INSERT INTO webhook_attempts (delivery_id, status, attempts, next_attempt_at, attempted_at, status_code, error, latency_ms)
        SELECT d.id, 'pending', l.attempts, ${new Date(at)}, l.attempted_at, l.status_code, l.error, l.latency_ms
        FROM webhook_deliveries d JOIN ${sql.unsafe(LATEST)}
        WHERE d.tenant_seq = ${tenantSeq} AND d.endpoint_id = ${endpointId} AND l.status <> 'pending'
          ${filter.id !== undefined ? sql`AND d.id = ${filter.id}::uuid` : sql``}
          ${filter.failedSince !== undefined ? sql`AND l.status = 'failed' AND d.created_at >= ${new Date(filter.failedSince)}` : sql``}
        RETURNING delivery_id::text AS id`;
      if (!ids.length) return [];
      const rows = await sql<RecordRow[]>`
        SELECT ${sql.unsafe(RECORD_COLUMNS)} FROM webhook_deliveries d JOIN ${sql.unsafe(LATEST)}
        WHERE d.id = ANY(${ids.map((r) => r.id)}::uuid[]) ORDER BY d.created_at, d.id`;
      const records = rows.map(toRecord);
      await this.queue.requeue(records.map((r) => ({ delivery: r, attempts: r.attempts })), at);
      return records;
    });
  }

  async failPending(tenantSeq: number, endpointId: string, reason: string, at: number): Promise<number> {
    const rows = await this.db.run((sql) => sql`
      INSERT INTO webhook_attempts (delivery_id, status, attempts, next_attempt_at, attempted_at, status_code, error, latency_ms)
      SELECT d.id, 'failed', l.attempts, NULL, coalesce(l.attempted_at, ${new Date(at)}), l.status_code, ${reason}, l.latency_ms
      FROM webhook_deliveries d JOIN ${sql.unsafe(LATEST)}
      WHERE d.tenant_seq = ${tenantSeq} AND d.endpoint_id = ${endpointId} AND l.status = 'pending'`);
    return rows.count;
  }

  async deletePending(tenantSeq: number, endpointId: string): Promise<number> {
    const rows = await this.db.run((sql) => sql`
      DELETE FROM webhook_deliveries d
      WHERE d.tenant_seq = ${tenantSeq} AND d.endpoint_id = ${endpointId} AND ${sql.unsafe(CURRENT_STATUS)} = 'pending'`);
    return rows.count;
  }

  async purgeBefore(cutoffMs: number): Promise<number> {
    const rows = await this.db.run((sql) => sql`
      DELETE FROM webhook_deliveries d WHERE d.created_at < ${new Date(cutoffMs)} AND ${sql.unsafe(CURRENT_STATUS)} <> 'pending'`);
    return rows.count;
  }

  /**
   * Removes a user's logged deliveries (their payloads hold the user's events): by `userId` when
   * known, else by the hex SHA-256 a deletion job keeps. Queued ones are dropped by the dispatcher.
   */
  async eraseUser(tenantSeq: number, userHash: string, userId?: string): Promise<number> {
    const rows = await this.db.run((sql) =>
      userId !== undefined
        ? sql`DELETE FROM webhook_deliveries WHERE tenant_seq = ${tenantSeq} AND user_id = ${userId}`
        : sql`DELETE FROM webhook_deliveries WHERE tenant_seq = ${tenantSeq} AND user_id IS NOT NULL
                AND encode(sha256(convert_to(user_id, 'UTF8')), 'hex') = ${userHash}`,
    );
    return rows.count;
  }
}

/** Adds deliveries to the log; those already there stay as they are. */
async function insertDeliveries(sql: PgTransaction, deliveries: NewDelivery[]): Promise<void> {
  await sql`
    INSERT INTO webhook_deliveries (id, tenant_seq, endpoint_id, event_id, event, user_id, payload, created_at)
    SELECT v.id, v.tenant_seq, v.endpoint_id, v.event_id, v.event, v.user_id, v.payload, to_timestamp(v.created_ms / 1000.0)
    FROM unnest(${deliveries.map((d) => d.id)}::uuid[], ${deliveries.map((d) => d.tenantSeq)}::integer[], ${deliveries.map((d) => d.endpointId)}::text[],
      ${deliveries.map((d) => d.eventId)}::text[], ${deliveries.map((d) => d.event)}::text[], ${deliveries.map((d) => d.userId)}::text[],
      ${deliveries.map((d) => d.payload)}::text[], ${deliveries.map((d) => d.createdAt)}::float8[])
      AS v (id, tenant_seq, endpoint_id, event_id, event, user_id, payload, created_ms)
    ON CONFLICT (id) DO NOTHING`;
}

/** Appends one row per outcome, except to deliveries already finished (or not in the log). */
async function appendRows(sql: PgTransaction, rows: Array<{ id: string; outcome: AttemptOutcome }>): Promise<void> {
  const o = rows.map((r) => r.outcome);
  await sql`
    INSERT INTO webhook_attempts (delivery_id, status, attempts, next_attempt_at, attempted_at, status_code, error, latency_ms)
    SELECT v.id, v.status, v.attempts, to_timestamp(v.next_ms / 1000.0), to_timestamp(v.attempted_ms / 1000.0), v.status_code, v.error, v.latency_ms
    FROM unnest(${rows.map((r) => r.id)}::uuid[], ${o.map((x) => x.status)}::text[], ${o.map((x) => x.attempts)}::integer[],
      ${o.map((x) => x.nextAttemptAt)}::float8[], ${o.map((x) => x.attemptedAt)}::float8[], ${o.map((x) => x.statusCode)}::integer[],
      ${o.map((x) => x.error)}::text[], ${o.map((x) => x.latencyMs)}::integer[])
      AS v (id, status, attempts, next_ms, attempted_ms, status_code, error, latency_ms)
    WHERE EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = v.id)
      AND coalesce((SELECT a.status FROM webhook_attempts a WHERE a.delivery_id = v.id ORDER BY a.seq DESC LIMIT 1), 'pending') = 'pending'`;
}

function toRecord(row: RecordRow): DeliveryRecord {
  return {
    id: row.id,
    tenantSeq: row.tenant_seq,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    event: row.event,
    userId: row.user_id,
    payload: row.payload,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at?.getTime() ?? null,
    lastAttemptAt: row.attempted_at?.getTime() ?? null,
    lastStatusCode: row.status_code,
    lastError: row.error,
    lastLatencyMs: row.latency_ms,
    createdAt: row.created_at.getTime(),
    deliveredAt: row.delivered_at?.getTime() ?? null,
  };
}
