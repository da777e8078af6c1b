import { listValue, type DuckDBValue } from '@duckdb/node-api';
import type { MetaStore, NewTenant, TenantPatch } from '../meta-store';
import type { AdminTokenRecord, ApiKeyRecord, Tenant, TenantSettings } from '../records';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { nullableNumber } from './row-values';

const TENANT_COLUMNS = 'seq, id, name, epoch_ms(created_at) AS created_at_ms, retention_months, settings';
const API_KEY_COLUMNS =
  'id, tenant_seq, key, name, epoch_ms(created_at) AS created_at_ms, epoch_ms(revoked_at) AS revoked_at_ms';
const TOKEN_COLUMNS =
  'id, tenant_seq, token_hash, prefix, name, epoch_ms(created_at) AS created_at_ms, epoch_ms(revoked_at) AS revoked_at_ms';

/** Tenants, credentials and the broadcast registry in the embedded database. */
export class DuckDbMetaStore implements MetaStore {
  constructor(private readonly db: DuckDbDatabase) {}

  async createTenant(tenant: NewTenant): Promise<Tenant> {
    // A tenant starts with its default campaign, where discovered broadcasts go.
    const rows = await this.db.transaction(async (c) => {
      const created = await this.db.writeQuery(
        c,
        `INSERT INTO tenants (id, name, created_at, retention_months, settings)
         VALUES ($1, $2, epoch_ms($3::BIGINT), $4, $5) RETURNING ${TENANT_COLUMNS}`,
        [tenant.id, tenant.name, tenant.createdAt, tenant.retentionMonths, JSON.stringify(tenant.settings)],
      );
      await c.run(`INSERT INTO campaigns VALUES ($1, $2, 'Default campaign', epoch_ms($3::BIGINT)) ON CONFLICT DO NOTHING`, [
        Number(created[0]!.seq),
        tenant.settings.defaultCampaignId,
        tenant.createdAt,
      ]);
      return created;
    });
    return toTenant(rows[0]!);
  }

  async getTenant(id: string): Promise<Tenant | null> {
    const rows = await this.db.query(`SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = $1`, [id]);
    return rows[0] ? toTenant(rows[0]) : null;
  }

  async getTenantBySeq(seq: number): Promise<Tenant | null> {
    const rows = await this.db.query(`SELECT ${TENANT_COLUMNS} FROM tenants WHERE seq = $1`, [seq]);
    return rows[0] ? toTenant(rows[0]) : null;
  }

  async listTenants(): Promise<Tenant[]> {
    return (await this.db.query(`SELECT ${TENANT_COLUMNS} FROM tenants ORDER BY seq`)).map(toTenant);
  }

  async updateTenant(seq: number, patch: TenantPatch): Promise<Tenant> {
    const sets: string[] = [];
    const values: DuckDBValue[] = [seq];
    const add = (column: string, value: DuckDBValue) => {
      values.push(value);
      sets.push(`${column} = $${values.length}`);
    };
    if (patch.name !== undefined) add('name', patch.name);
    if (patch.retentionMonths !== undefined) add('retention_months', patch.retentionMonths);
    if (patch.settings !== undefined) add('settings', JSON.stringify(patch.settings));
    const rows = await this.db.write((c) =>
      sets.length
        ? this.db.writeQuery(c, `UPDATE tenants SET ${sets.join(', ')} WHERE seq = $1 RETURNING ${TENANT_COLUMNS}`, values)
        : this.db.writeQuery(c, `SELECT ${TENANT_COLUMNS} FROM tenants WHERE seq = $1`, values),
    );
    if (!rows[0]) throw new Error(`tenant ${seq} does not exist`);
    return toTenant(rows[0]);
  }

  async createApiKey(record: ApiKeyRecord): Promise<void> {
    await this.db.write((c) =>
      c.run('INSERT INTO api_keys VALUES ($1, $2, $3, $4, epoch_ms($5::BIGINT), NULL)', [
        record.id,
        record.tenantSeq,
        record.key,
        record.name,
        record.createdAt,
      ]),
    );
  }

  async findApiKey(key: string): Promise<ApiKeyRecord | null> {
    const rows = await this.db.query(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE key = $1`, [key]);
    return rows[0] ? toApiKey(rows[0]) : null;
  }

  async listApiKeys(tenantSeq: number): Promise<ApiKeyRecord[]> {
    const rows = await this.db.query(
      `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE tenant_seq = $1 ORDER BY created_at, id`,
      [tenantSeq],
    );
    return rows.map(toApiKey);
  }

  async revokeApiKey(tenantSeq: number | null, id: string, revokedAt: number): Promise<ApiKeyRecord | null> {
    const rows = await this.db.write((c) =>
      this.db.writeQuery(
        c,
        `UPDATE api_keys SET revoked_at = coalesce(revoked_at, epoch_ms($3::BIGINT))
         WHERE id = $1 AND ($2::INTEGER IS NULL OR tenant_seq = $2) RETURNING ${API_KEY_COLUMNS}`,
        [id, tenantSeq, revokedAt],
      ),
    );
    return rows[0] ? toApiKey(rows[0]) : null;
  }

  async createAdminToken(record: AdminTokenRecord): Promise<void> {
    await this.db.write((c) =>
      c.run('INSERT INTO admin_tokens VALUES ($1, $2, $3, $4, $5, epoch_ms($6::BIGINT), NULL)', [
        record.id,
        record.tenantSeq,
        record.tokenHash,
        record.prefix,
        record.name,
        record.createdAt,
      ]),
    );
  }

  async findAdminTokenByHash(tokenHash: string): Promise<AdminTokenRecord | null> {
    const rows = await this.db.query(`SELECT ${TOKEN_COLUMNS} FROM admin_tokens WHERE token_hash = $1`, [tokenHash]);
    return rows[0] ? toAdminToken(rows[0]) : null;
  }

  async listAdminTokens(tenantSeq: number): Promise<AdminTokenRecord[]> {
    const rows = await this.db.query(
      `SELECT ${TOKEN_COLUMNS} FROM admin_tokens WHERE tenant_seq = $1 ORDER BY created_at, id`,
      [tenantSeq],
    );
    return rows.map(toAdminToken);
  }

  async revokeAdminToken(tenantSeq: number | null, id: string, revokedAt: number): Promise<AdminTokenRecord | null> {
    const rows = await this.db.write((c) =>
      this.db.writeQuery(
        c,
        `UPDATE admin_tokens SET revoked_at = coalesce(revoked_at, epoch_ms($3::BIGINT))
         WHERE id = $1 AND ($2::INTEGER IS NULL OR tenant_seq = $2) RETURNING ${TOKEN_COLUMNS}`,
        [id, tenantSeq, revokedAt],
      ),
    );
    return rows[0] ? toAdminToken(rows[0]) : null;
  }

  async resolveBroadcasts(
    tenantSeq: number,
    wanted: ReadonlyArray<{ broadcastId: string; campaignId: number }>,
    now: number,
  ): Promise<Map<string, number>> {
    const result = new Map<string, number>();
    if (!wanted.length) return result;
    return this.db.transaction(async (c) => {
      const insert = await c.prepare(
        `INSERT INTO broadcasts VALUES ($1, $2, $3, NULL, epoch_ms($4::BIGINT)) ON CONFLICT DO NOTHING`,
      );
      // A discovered broadcast's campaign exists from then on, so every broadcast has one.
      const campaign = await c.prepare(
        `INSERT INTO campaigns VALUES ($1, $2, 'Campaign ' || $2, epoch_ms($3::BIGINT)) ON CONFLICT DO NOTHING`,
      );
      for (const { broadcastId, campaignId } of wanted) {
        insert.bind([tenantSeq, broadcastId, campaignId, now]);
        if (Number((await insert.run()).rowsChanged) > 0) {
          campaign.bind([tenantSeq, campaignId, now]);
          await campaign.run();
        }
      }
      const rows = await this.db.writeQuery(
        c,
        'SELECT id, campaign_id FROM broadcasts WHERE tenant_seq = $1 AND list_contains($2::VARCHAR[], id)',
        [tenantSeq, listValue(wanted.map((w) => w.broadcastId))],
      );
      for (const row of rows) result.set(String(row.id), Number(row.campaign_id));
      return result;
    });
  }
}

function toTenant(row: Row): Tenant {
  return {
    seq: Number(row.seq),
    id: String(row.id),
    name: String(row.name),
    createdAt: Number(row.created_at_ms),
    retentionMonths: Number(row.retention_months),
    settings: JSON.parse(String(row.settings)) as TenantSettings,
  };
}

function toApiKey(row: Row): ApiKeyRecord {
  return {
    id: String(row.id),
    tenantSeq: Number(row.tenant_seq),
    key: String(row.key),
    name: String(row.name),
    createdAt: Number(row.created_at_ms),
    revokedAt: nullableNumber(row.revoked_at_ms),
  };
}

function toAdminToken(row: Row): AdminTokenRecord {
  return {
    id: String(row.id),
    tenantSeq: Number(row.tenant_seq),
    tokenHash: String(row.token_hash),
    prefix: String(row.prefix),
    name: String(row.name),
    createdAt: Number(row.created_at_ms),
    revokedAt: nullableNumber(row.revoked_at_ms),
  };
}
