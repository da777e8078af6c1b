import type { MetaStore, NewTenant, TenantPatch } from '../meta-store';
import type { AdminTokenRecord, ApiKeyRecord, Tenant, TenantSettings } from '../records';
import type { PgDatabase } from './pg-database';

interface TenantRow {
  seq: number;
  id: string;
  name: string;
  created_at: Date;
  retention_months: number;
  settings: TenantSettings;
}

interface ApiKeyRow {
  id: string;
  tenant_seq: number;
  key: string;
  name: string;
  created_at: Date;
  revoked_at: Date | null;
}

interface AdminTokenRow {
  id: string;
  tenant_seq: number;
  token_hash: string;
  prefix: string;
  name: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** Tenants, credentials and the broadcast registry in PostgreSQL, shared by every node. */
export class PgMetaStore implements MetaStore {
  constructor(private readonly db: PgDatabase) {}

  // Settings go in as JSON text cast on the server: a parameter the server describes as `json`
  // would be JSON-encoded once more by the client, storing a string.
  async createTenant(tenant: NewTenant): Promise<Tenant> {
    // A tenant starts with its default campaign, where discovered broadcasts go.
    const [row] = await this.db.transaction(async (sql) => {
      const created = await sql<TenantRow[]>`
        INSERT INTO tenants (id, name, created_at, retention_months, settings)
        VALUES (${tenant.id}, ${tenant.name}, ${new Date(tenant.createdAt)}, ${tenant.retentionMonths}, ${JSON.stringify(tenant.settings)}::text::json)
        RETURNING *`;
      await sql`
        INSERT INTO campaigns (tenant_seq, id, name, created_at)
        VALUES (${created[0]!.seq}, ${tenant.settings.defaultCampaignId}, 'Default campaign', ${new Date(tenant.createdAt)})
        ON CONFLICT DO NOTHING`;
      return created;
    });
    return toTenant(row!);
  }

  async getTenant(id: string): Promise<Tenant | null> {
    const [row] = await this.db.run((sql) => sql<TenantRow[]>`SELECT * FROM tenants WHERE id = ${id}`);
    return row ? toTenant(row) : null;
  }

  async getTenantBySeq(seq: number): Promise<Tenant | null> {
    const [row] = await this.db.run((sql) => sql<TenantRow[]>`SELECT * FROM tenants WHERE seq = ${seq}`);
    return row ? toTenant(row) : null;
  }

  async listTenants(): Promise<Tenant[]> {
    return (await this.db.run((sql) => sql<TenantRow[]>`SELECT * FROM tenants ORDER BY seq`)).map(toTenant);
  }

  async updateTenant(seq: number, patch: TenantPatch): Promise<Tenant> {
    // A field the patch leaves out keeps its value (null parameter → coalesce).
    const [row] = await this.db.run(
      (sql) => sql<TenantRow[]>`
        UPDATE tenants SET
          name = coalesce(${patch.name ?? null}::text, name),
          retention_months = coalesce(${patch.retentionMonths ?? null}::integer, retention_months),
          settings = coalesce(${patch.settings === undefined ? null : JSON.stringify(patch.settings)}::text::json, settings)
        WHERE seq = ${seq}
        RETURNING *`,
    );
    if (!row) throw new Error(`tenant ${seq} does not exist`);
    return toTenant(row);
  }

  async createApiKey(record: ApiKeyRecord): Promise<void> {
    await this.db.run(
      (sql) => sql`
        INSERT INTO api_keys (id, tenant_seq, key, name, created_at, revoked_at)
        VALUES (${record.id}, ${record.tenantSeq}, ${record.key}, ${record.name}, ${new Date(record.createdAt)}, NULL)`,
    );
  }

  async findApiKey(key: string): Promise<ApiKeyRecord | null> {
    const [row] = await this.db.run((sql) => sql<ApiKeyRow[]>`SELECT * FROM api_keys WHERE key = ${key}`);
    return row ? toApiKey(row) : null;
  }

  async listApiKeys(tenantSeq: number): Promise<ApiKeyRecord[]> {
    const rows = await this.db.run(
      (sql) => sql<ApiKeyRow[]>`SELECT * FROM api_keys WHERE tenant_seq = ${tenantSeq} ORDER BY created_at, id COLLATE "C"`,
    );
    return rows.map(toApiKey);
  }

  async revokeApiKey(tenantSeq: number | null, id: string, revokedAt: number): Promise<ApiKeyRecord | null> {
    const [row] = await this.db.run(
      (sql) => sql<ApiKeyRow[]>`
        UPDATE api_keys SET revoked_at = coalesce(revoked_at, ${new Date(revokedAt)})
        WHERE id = ${id} AND (${tenantSeq}::integer IS NULL OR tenant_seq = ${tenantSeq}::integer)
        RETURNING *`,
    );
    return row ? toApiKey(row) : null;
  }

  async createAdminToken(record: AdminTokenRecord): Promise<void> {
    await this.db.run(
      (sql) => sql`
        INSERT INTO admin_tokens (id, tenant_seq, token_hash, prefix, name, created_at, revoked_at)
        VALUES (${record.id}, ${record.tenantSeq}, ${record.tokenHash}, ${record.prefix}, ${record.name}, ${new Date(record.createdAt)}, NULL)`,
    );
  }

  async findAdminTokenByHash(tokenHash: string): Promise<AdminTokenRecord | null> {
    const [row] = await this.db.run((sql) => sql<AdminTokenRow[]>`SELECT * FROM admin_tokens WHERE token_hash = ${tokenHash}`);
    return row ? toAdminToken(row) : null;
  }

  async listAdminTokens(tenantSeq: number): Promise<AdminTokenRecord[]> {
    const rows = await this.db.run(
      (sql) => sql<AdminTokenRow[]>`SELECT * FROM admin_tokens WHERE tenant_seq = ${tenantSeq} ORDER BY created_at, id COLLATE "C"`,
    );
    return rows.map(toAdminToken);
  }

  async revokeAdminToken(tenantSeq: number | null, id: string, revokedAt: number): Promise<AdminTokenRecord | null> {
    const [row] = await this.db.run(
      (sql) => sql<AdminTokenRow[]>`
        UPDATE admin_tokens SET revoked_at = coalesce(revoked_at, ${new Date(revokedAt)})
        WHERE id = ${id} AND (${tenantSeq}::integer IS NULL OR tenant_seq = ${tenantSeq}::integer)
        RETURNING *`,
    );
    return row ? toAdminToken(row) : null;
  }

  async resolveBroadcasts(
    tenantSeq: number,
    wanted: ReadonlyArray<{ broadcastId: string; campaignId: number }>,
    now: number,
  ): Promise<Map<string, number>> {
    const result = new Map<string, number>();
    if (!wanted.length) return result;
    const ids = wanted.map((w) => w.broadcastId);
    const campaigns = wanted.map((w) => w.campaignId);
    // Registers the unknown broadcasts (the first campaign named for one wins) and, for each one
    // registered, its campaign, in one statement. A node registering the same broadcast at the
    // same moment waits on its key, then skips it.
    await this.db.run(
      (sql) => sql`
        WITH wanted AS (
          SELECT DISTINCT ON (id) id, campaign_id
          FROM unnest(${ids}::text[], ${campaigns}::bigint[]) WITH ORDINALITY AS w(id, campaign_id, position)
          ORDER BY id, position
        ), registered AS (
          INSERT INTO broadcasts (tenant_seq, id, campaign_id, title, created_at)
          SELECT ${tenantSeq}::integer, id, campaign_id, NULL, ${new Date(now)} FROM wanted
          ON CONFLICT DO NOTHING
          RETURNING campaign_id
        )
        INSERT INTO campaigns (tenant_seq, id, name, created_at)
        SELECT DISTINCT ${tenantSeq}::integer, campaign_id, 'Campaign ' || campaign_id, ${new Date(now)} FROM registered
        ON CONFLICT DO NOTHING`,
    );
    // A statement of its own, so that it sees what another node registered while the insert waited.
    const rows = await this.db.run(
      (sql) => sql<{ id: string; campaign_id: string }[]>`
        SELECT id, campaign_id FROM broadcasts WHERE tenant_seq = ${tenantSeq} AND id = ANY(${ids}::text[])`,
    );
    for (const row of rows) result.set(row.id, Number(row.campaign_id));
    return result;
  }
}

function toTenant(row: TenantRow): Tenant {
  return {
    seq: row.seq,
    id: row.id,
    name: row.name,
    createdAt: row.created_at.getTime(),
    retentionMonths: row.retention_months,
    settings: row.settings,
  };
}

function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    tenantSeq: row.tenant_seq,
    key: row.key,
    name: row.name,
    createdAt: row.created_at.getTime(),
    revokedAt: row.revoked_at?.getTime() ?? null,
  };
}

function toAdminToken(row: AdminTokenRow): AdminTokenRecord {
  return {
    id: row.id,
    tenantSeq: row.tenant_seq,
    tokenHash: row.token_hash,
    prefix: row.prefix,
    name: row.name,
    createdAt: row.created_at.getTime(),
    revokedAt: row.revoked_at?.getTime() ?? null,
  };
}
