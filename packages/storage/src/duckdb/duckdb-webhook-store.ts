import { listValue, type DuckDBValue } from '@duckdb/node-api';
import type { AttemptOutcome, DeliveryRecord, DeliveryStatus, WebhookDeliveryStore } from '../webhook-delivery-store';
import type { WebhookEndpointRecord, WebhookEndpointStore } from '../webhook-endpoint-store';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { nullableNumber, nullableString } from './row-values';

/** The shape of a batch of attempts as `recordAttempts` sends it. */
const ATTEMPT_BATCH_TYPE = JSON.stringify([{ id: 'UUID', status: 'VARCHAR', attempts: 'INTEGER', next_ms: 'BIGINT', attempted_ms: 'BIGINT', status_code: 'INTEGER', error: 'VARCHAR', latency_ms: 'INTEGER' }]);

const ENDPOINT_COLUMNS = `tenant_seq, id, url, description, event_types, enabled, disabled_reason, secret, previous_secret,
  epoch_ms(previous_secret_expires_at) AS previous_secret_expires_ms, epoch_ms(failing_since) AS failing_since_ms,
  epoch_ms(created_at) AS created_ms, epoch_ms(updated_at) AS updated_ms`;
const DELIVERY_COLUMNS = `id::VARCHAR AS id, tenant_seq, endpoint_id, event_id::VARCHAR AS event_id, event, user_id, payload, status,
  attempts, epoch_ms(next_attempt_at) AS next_ms, epoch_ms(last_attempt_at) AS last_ms, last_status_code, last_error,
  last_latency_ms, epoch_ms(created_at) AS created_ms, epoch_ms(delivered_at) AS delivered_ms`;

/** Webhook endpoints and deliveries in the embedded database. */
export class DuckDbWebhookStore implements WebhookEndpointStore, WebhookDeliveryStore {
  constructor(private readonly db: DuckDbDatabase) {}

  createEndpoint(r: WebhookEndpointRecord, maxPerTenant: number): Promise<boolean> {
    return this.db.transaction(async (c) => {
      const [row] = await this.db.writeQuery(c, 'SELECT count(*)::INTEGER AS n FROM webhook_endpoints WHERE tenant_seq = $1', [r.tenantSeq]);
      if (Number(row?.n) >= maxPerTenant) return false;
      await c.run(
        `INSERT INTO webhook_endpoints VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, epoch_ms($10::BIGINT), epoch_ms($11::BIGINT),
           epoch_ms($12::BIGINT), epoch_ms($13::BIGINT))`,
        endpointValues(r),
      );
      return true;
    });
  }

  async getEndpoint(tenantSeq: number, id: string): Promise<WebhookEndpointRecord | null> {
    const rows = await this.db.query(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE tenant_seq = $1 AND id = $2`, [tenantSeq, id]);
    return rows[0] ? toEndpoint(rows[0]) : null;
  }

  async listEndpoints(tenantSeq: number): Promise<WebhookEndpointRecord[]> {
    const rows = await this.db.query(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE tenant_seq = $1 ORDER BY created_at, id`, [tenantSeq]);
    return rows.map(toEndpoint);
  }

  async listEnabledEndpoints(): Promise<WebhookEndpointRecord[]> {
    return (await this.db.query(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE enabled ORDER BY tenant_seq, id`)).map(toEndpoint);
  }

  async updateEndpoint(r: WebhookEndpointRecord): Promise<void> {
    const values = endpointValues(r);
    values.splice(11, 1); // created_at never changes
    await this.db.write((c) =>
      c.run(
        `UPDATE webhook_endpoints SET url = $3, description = $4, event_types = $5, enabled = $6, disabled_reason = $7, secret = $8,
           previous_secret = $9, previous_secret_expires_at = epoch_ms($10::BIGINT), failing_since = epoch_ms($11::BIGINT),
           updated_at = epoch_ms($12::BIGINT)
         WHERE tenant_seq = $1 AND id = $2`,
        values,
      ),
    );
  }

  async deleteEndpoint(tenantSeq: number, id: string): Promise<boolean> {
    return this.db.write(async (c) => Number((await c.run('DELETE FROM webhook_endpoints WHERE tenant_seq = $1 AND id = $2', [tenantSeq, id])).rowsChanged) > 0);
  }

  async logDelivery(d: DeliveryRecord): Promise<void> {
    await this.db.write((c) =>
      c.run(
        `INSERT INTO webhook_deliveries VALUES ($1::UUID, $2, $3, $4::UUID, $5, $6, $7, $8, $9, NULL, epoch_ms($10::BIGINT), $11, $12, $13,
           epoch_ms($14::BIGINT), epoch_ms($15::BIGINT))`,
        [d.id, d.tenantSeq, d.endpointId, d.eventId, d.event, d.userId, d.payload, d.status, d.attempts, d.lastAttemptAt, d.lastStatusCode, d.lastError, d.lastLatencyMs, d.createdAt, d.deliveredAt],
      ),
    );
  }

  async listPending(): Promise<DeliveryRecord[]> {
    return (await this.db.query(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE status = 'pending' ORDER BY next_attempt_at`)).map(toDelivery);
  }

  async getDelivery(tenantSeq: number, id: string): Promise<DeliveryRecord | null> {
    const rows = await this.db.query(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE tenant_seq = $1 AND id = TRY_CAST($2 AS UUID)`, [tenantSeq, id]);
    return rows[0] ? toDelivery(rows[0]) : null;
  }

  async listDeliveries(
    tenantSeq: number,
    endpointId: string,
    options: { limit: number; status?: DeliveryStatus; before?: { createdAt: number; id: string } },
  ): Promise<DeliveryRecord[]> {
    const values: DuckDBValue[] = [tenantSeq, endpointId, options.limit];
    let where = 'tenant_seq = $1 AND endpoint_id = $2';
    if (options.status) {
      values.push(options.status);
      where += ` AND status = $${values.length}`;
    }
    if (options.before) {
      values.push(options.before.createdAt, options.before.id);
      const at = `epoch_ms($${values.length - 1}::BIGINT)`;
      where += ` AND (created_at < ${at} OR (created_at = ${at} AND id < $${values.length}::UUID))`;
    }
    const rows = await this.db.query(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $3`, values);
    return rows.map(toDelivery);
  }

  async pendingAmong(ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.db.query(
      `SELECT id::VARCHAR AS id FROM webhook_deliveries WHERE status = 'pending' AND list_contains($1::UUID[], id)`,
      [listValue(ids)],
    );
    return new Set(rows.map((row) => String(row.id)));
  }

  async recordAttempts(attempts: Array<{ id: string; outcome: AttemptOutcome }>): Promise<void> {
    if (!attempts.length) return;
    // One JSON text for the whole batch: binding eight lists value by value cost more on the
    // event loop than DuckDB takes to parse it.
    const batch = JSON.stringify(
      attempts.map(({ id, outcome: o }) => ({
        id, status: o.status, attempts: o.attempts, next_ms: o.nextAttemptAt, attempted_ms: o.attemptedAt,
        status_code: o.statusCode, error: o.error, latency_ms: o.latencyMs,
      })),
    );
    await this.db.write((c) =>
      c.run(
        `UPDATE webhook_deliveries d SET status = v.status, attempts = v.attempts, next_attempt_at = epoch_ms(v.next_ms),
           last_attempt_at = epoch_ms(v.attempted_ms), last_status_code = v.status_code, last_error = v.error, last_latency_ms = v.latency_ms,
           delivered_at = CASE WHEN v.status = 'delivered' THEN epoch_ms(v.attempted_ms) ELSE d.delivered_at END
         FROM (SELECT unnest(from_json($1, '${ATTEMPT_BATCH_TYPE}'), recursive := true)) v
         WHERE d.id = v.id AND d.status = 'pending'`,
        [batch],
      ),
    );
  }

  async requeue(tenantSeq: number, endpointId: string, filter: { id?: string; failedSince?: number }, at: number): Promise<DeliveryRecord[]> {
    const values: DuckDBValue[] = [tenantSeq, endpointId, at];
    let where = `tenant_seq = $1 AND endpoint_id = $2 AND status <> 'pending'`;
    if (filter.id !== undefined) {
      values.push(filter.id);
      where += ` AND id = TRY_CAST($${values.length} AS UUID)`;
    }
    if (filter.failedSince !== undefined) {
      values.push(filter.failedSince);
      where += ` AND status = 'failed' AND created_at >= epoch_ms($${values.length}::BIGINT)`;
    }
    const rows = await this.db.write((c) =>
      this.db.writeQuery(c, `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = epoch_ms($3::BIGINT) WHERE ${where} RETURNING ${DELIVERY_COLUMNS}`, values),
    );
    return rows.map(toDelivery);
  }

  async failPending(tenantSeq: number, endpointId: string, reason: string, at: number): Promise<number> {
    return this.db.write(async (c) => {
      const result = await c.run(
        `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = $3, last_attempt_at = coalesce(last_attempt_at, epoch_ms($4::BIGINT))
         WHERE tenant_seq = $1 AND endpoint_id = $2 AND status = 'pending'`,
        [tenantSeq, endpointId, reason, at],
      );
      return Number(result.rowsChanged);
    });
  }

  async deletePending(tenantSeq: number, endpointId: string): Promise<number> {
    return this.db.write(async (c) =>
      Number((await c.run(`DELETE FROM webhook_deliveries WHERE tenant_seq = $1 AND endpoint_id = $2 AND status = 'pending'`, [tenantSeq, endpointId])).rowsChanged),
    );
  }

  async purgeBefore(cutoffMs: number): Promise<number> {
    return this.db.write(async (c) =>
      Number((await c.run(`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < epoch_ms($1::BIGINT)`, [cutoffMs])).rowsChanged),
    );
  }
}

function endpointValues(r: WebhookEndpointRecord): DuckDBValue[] {
  return [
    r.tenantSeq,
    r.id,
    r.url,
    r.description,
    r.eventTypes ? JSON.stringify(r.eventTypes) : null,
    r.enabled,
    r.disabledReason,
    r.secret,
    r.previousSecret,
    r.previousSecretExpiresAt,
    r.failingSince,
    r.createdAt,
    r.updatedAt,
  ];
}

function toEndpoint(row: Row): WebhookEndpointRecord {
  return {
    tenantSeq: Number(row.tenant_seq),
    id: String(row.id),
    url: String(row.url),
    description: nullableString(row.description),
    eventTypes: row.event_types === null ? null : (JSON.parse(String(row.event_types)) as string[]),
    enabled: Boolean(row.enabled),
    disabledReason: nullableString(row.disabled_reason),
    secret: String(row.secret),
    previousSecret: nullableString(row.previous_secret),
    previousSecretExpiresAt: nullableNumber(row.previous_secret_expires_ms),
    failingSince: nullableNumber(row.failing_since_ms),
    createdAt: Number(row.created_ms),
    updatedAt: Number(row.updated_ms),
  };
}

function toDelivery(row: Row): DeliveryRecord {
  return {
    id: String(row.id),
    tenantSeq: Number(row.tenant_seq),
    endpointId: String(row.endpoint_id),
    eventId: String(row.event_id),
    event: String(row.event),
    userId: nullableString(row.user_id),
    payload: String(row.payload),
    status: String(row.status) as DeliveryStatus,
    attempts: Number(row.attempts),
    nextAttemptAt: nullableNumber(row.next_ms),
    lastAttemptAt: nullableNumber(row.last_ms),
    lastStatusCode: nullableNumber(row.last_status_code),
    lastError: nullableString(row.last_error),
    lastLatencyMs: nullableNumber(row.last_latency_ms),
    createdAt: Number(row.created_ms),
    deliveredAt: nullableNumber(row.delivered_ms),
  };
}
