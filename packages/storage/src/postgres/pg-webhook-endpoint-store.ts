import type { WebhookEndpointRecord, WebhookEndpointStore } from '../webhook-endpoint-store';
import type { PgDatabase } from './pg-database';

/**
 * First key of the transaction-scoped advisory lock (two-key form, the tenant's seq second)
 * that endpoint creations of one tenant take, so that nodes creating at the same moment count
 * each other's endpoints. Any constant works as long as nothing else in the database uses it.
 */
export const ENDPOINT_CREATE_LOCK_KEY = 1_907_531_064;

interface EndpointRow {
  tenant_seq: number;
  id: string;
  url: string;
  description: string | null;
  event_types: string[] | null;
  enabled: boolean;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Webhook endpoints in PostgreSQL, shared by every node; their deliveries stay beside the events. */
export class PgWebhookEndpointStore implements WebhookEndpointStore {
  constructor(private readonly db: PgDatabase) {}

  createEndpoint(r: WebhookEndpointRecord, maxPerTenant: number): Promise<boolean> {
    return this.db.transaction(async (sql) => {
      await sql`SELECT pg_advisory_xact_lock(${ENDPOINT_CREATE_LOCK_KEY}::integer, ${r.tenantSeq}::integer)`;
      const [count] = await sql<{ n: number }[]>`SELECT count(*)::integer AS n FROM webhook_endpoints WHERE tenant_seq = ${r.tenantSeq}`;
      if (count!.n >= maxPerTenant) return false;
      await sql`
        INSERT INTO webhook_endpoints (tenant_seq, id, url, description, event_types, enabled, disabled_reason, secret, previous_secret,
          previous_secret_expires_at, failing_since, created_at, updated_at)
        VALUES (${r.tenantSeq}, ${r.id}, ${r.url}, ${r.description}, ${r.eventTypes}::text[], ${r.enabled}, ${r.disabledReason}, ${r.secret},
          ${r.previousSecret}, ${toDate(r.previousSecretExpiresAt)}, ${toDate(r.failingSince)}, ${new Date(r.createdAt)}, ${new Date(r.updatedAt)})`;
      return true;
    });
  }

  async getEndpoint(tenantSeq: number, id: string): Promise<WebhookEndpointRecord | null> {
    const [row] = await this.db.run((sql) => sql<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE tenant_seq = ${tenantSeq} AND id = ${id}`);
    return row ? toEndpoint(row) : null;
  }

  async listEndpoints(tenantSeq: number): Promise<WebhookEndpointRecord[]> {
    const rows = await this.db.run(
      (sql) => sql<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE tenant_seq = ${tenantSeq} ORDER BY created_at, id COLLATE "C"`,
    );
    return rows.map(toEndpoint);
  }

  async listEnabledEndpoints(): Promise<WebhookEndpointRecord[]> {
    const rows = await this.db.run((sql) => sql<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE enabled ORDER BY tenant_seq, id COLLATE "C"`);
    return rows.map(toEndpoint);
  }

  async updateEndpoint(r: WebhookEndpointRecord): Promise<void> {
    // created_at never changes.
    await this.db.run(
      (sql) => sql`
        UPDATE webhook_endpoints SET url = ${r.url}, description = ${r.description}, event_types = ${r.eventTypes}::text[], enabled = ${r.enabled},
          disabled_reason = ${r.disabledReason}, secret = ${r.secret}, previous_secret = ${r.previousSecret},
          previous_secret_expires_at = ${toDate(r.previousSecretExpiresAt)}, failing_since = ${toDate(r.failingSince)}, updated_at = ${new Date(r.updatedAt)}
        WHERE tenant_seq = ${r.tenantSeq} AND id = ${r.id}`,
    );
  }

  async deleteEndpoint(tenantSeq: number, id: string): Promise<boolean> {
    const result = await this.db.run((sql) => sql`DELETE FROM webhook_endpoints WHERE tenant_seq = ${tenantSeq} AND id = ${id}`);
    return result.count > 0;
  }
}

function toDate(ms: number | null): Date | null {
  return ms === null ? null : new Date(ms);
}

function toEndpoint(row: EndpointRow): WebhookEndpointRecord {
  return {
    tenantSeq: row.tenant_seq,
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.event_types,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: row.previous_secret_expires_at?.getTime() ?? null,
    failingSince: row.failing_since?.getTime() ?? null,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
  };
}
