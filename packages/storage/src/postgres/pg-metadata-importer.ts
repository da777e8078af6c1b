import type { BroadcastRecord, CampaignRecord, OverlayRecord, SponsorRecord } from '../content-store';
import type { DeletionJob } from '../deletion-job-store';
import type { MetadataImporter } from '../metadata-importer';
import type { AdminTokenRecord, ApiKeyRecord, Tenant } from '../records';
import type { SessionRecord } from '../session-store';
import type { WebhookEndpointRecord } from '../webhook-endpoint-store';
import type { PgDatabase, PgSql } from './pg-database';

const date = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));
/** JSON text cast on the server (a parameter described as `json` would be encoded twice). */
const jsonText = (value: unknown): string => JSON.stringify(value);

/**
 * Writes records into the PostgreSQL metadata database with every field as given. Each write
 * is one statement: `ON CONFLICT DO NOTHING` leaves a taken key (and any other unique value,
 * an API key's text or a token's hash) alone; with `overwrite`, `DO UPDATE` replaces the row
 * under the same primary key.
 */
export class PgMetadataImporter implements MetadataImporter {
  constructor(private readonly db: PgDatabase) {}

  importTenant(t: Tenant, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO tenants (seq, id, name, created_at, retention_months, settings)
        VALUES (${t.seq}, ${t.id}, ${t.name}, ${new Date(t.createdAt)}, ${t.retentionMonths}, ${jsonText(t.settings)}::text::json)
        ${overwrite
          ? sql`ON CONFLICT (seq) DO UPDATE SET name = EXCLUDED.name, created_at = EXCLUDED.created_at,
                  retention_months = EXCLUDED.retention_months, settings = EXCLUDED.settings
                WHERE tenants.id = EXCLUDED.id`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING seq`,
    );
  }

  async moveTenantNumbering(): Promise<void> {
    await this.db.run(
      (sql) => sql`SELECT setval(pg_get_serial_sequence('tenants', 'seq'), max(seq)) FROM tenants HAVING max(seq) IS NOT NULL`,
    );
  }

  importApiKey(r: ApiKeyRecord, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO api_keys (id, tenant_seq, key, name, created_at, revoked_at)
        VALUES (${r.id}, ${r.tenantSeq}, ${r.key}, ${r.name}, ${new Date(r.createdAt)}, ${date(r.revokedAt)})
        ${overwrite
          ? sql`ON CONFLICT (id) DO UPDATE SET tenant_seq = EXCLUDED.tenant_seq, key = EXCLUDED.key, name = EXCLUDED.name,
                  created_at = EXCLUDED.created_at, revoked_at = EXCLUDED.revoked_at`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id`,
    );
  }

  importAdminToken(r: AdminTokenRecord, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO admin_tokens (id, tenant_seq, token_hash, prefix, name, created_at, revoked_at)
        VALUES (${r.id}, ${r.tenantSeq}, ${r.tokenHash}, ${r.prefix}, ${r.name}, ${new Date(r.createdAt)}, ${date(r.revokedAt)})
        ${overwrite
          ? sql`ON CONFLICT (id) DO UPDATE SET tenant_seq = EXCLUDED.tenant_seq, token_hash = EXCLUDED.token_hash, prefix = EXCLUDED.prefix,
                  name = EXCLUDED.name, created_at = EXCLUDED.created_at, revoked_at = EXCLUDED.revoked_at`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id`,
    );
  }

  importCampaign(r: CampaignRecord, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO campaigns (tenant_seq, id, name, created_at)
        VALUES (${r.tenantSeq}, ${r.id}::bigint, ${r.name}, ${new Date(r.createdAt)})
        ${overwrite
          ? sql`ON CONFLICT (tenant_seq, id) DO UPDATE SET name = EXCLUDED.name, created_at = EXCLUDED.created_at`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id`,
    );
  }

  importSponsor(r: SponsorRecord, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO sponsors (tenant_seq, id, name, created_at, logo_url)
        VALUES (${r.tenantSeq}, ${r.id}, ${r.name}, ${new Date(r.createdAt)}, ${r.logoUrl})
        ${overwrite
          ? sql`ON CONFLICT (tenant_seq, id) DO UPDATE SET name = EXCLUDED.name, created_at = EXCLUDED.created_at, logo_url = EXCLUDED.logo_url`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id`,
    );
  }

  importBroadcast(r: BroadcastRecord, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO broadcasts (tenant_seq, id, campaign_id, title, created_at)
        VALUES (${r.tenantSeq}, ${r.id}, ${r.campaignId}::bigint, ${r.title}, ${new Date(r.createdAt)})
        ${overwrite
          ? sql`ON CONFLICT (tenant_seq, id) DO UPDATE SET campaign_id = EXCLUDED.campaign_id, title = EXCLUDED.title, created_at = EXCLUDED.created_at`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id`,
    );
  }

  importOverlay(r: OverlayRecord, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO overlays (tenant_seq, broadcast_id, id, type, content, active, created_at, updated_at, shown_at)
        VALUES (${r.tenantSeq}, ${r.broadcastId}, ${r.id}, ${r.type}, ${jsonText(r.content)}::text::json, ${r.active},
          ${new Date(r.createdAt)}, ${new Date(r.updatedAt)}, ${date(r.shownAt)})
        ${overwrite
          ? sql`ON CONFLICT (tenant_seq, id) DO UPDATE SET broadcast_id = EXCLUDED.broadcast_id, type = EXCLUDED.type, content = EXCLUDED.content,
                  active = EXCLUDED.active, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, shown_at = EXCLUDED.shown_at`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id`,
    );
  }

  importWebhookEndpoint(r: WebhookEndpointRecord, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO webhook_endpoints (tenant_seq, id, url, description, event_types, enabled, disabled_reason, secret, previous_secret,
          previous_secret_expires_at, failing_since, created_at, updated_at)
        VALUES (${r.tenantSeq}, ${r.id}, ${r.url}, ${r.description}, ${r.eventTypes}::text[], ${r.enabled}, ${r.disabledReason}, ${r.secret},
          ${r.previousSecret}, ${date(r.previousSecretExpiresAt)}, ${date(r.failingSince)}, ${new Date(r.createdAt)}, ${new Date(r.updatedAt)})
        ${overwrite
          ? sql`ON CONFLICT (tenant_seq, id) DO UPDATE SET url = EXCLUDED.url, description = EXCLUDED.description,
                  event_types = EXCLUDED.event_types, enabled = EXCLUDED.enabled, disabled_reason = EXCLUDED.disabled_reason,
                  secret = EXCLUDED.secret, previous_secret = EXCLUDED.previous_secret,
                  previous_secret_expires_at = EXCLUDED.previous_secret_expires_at, failing_since = EXCLUDED.failing_since,
                  created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id`,
    );
  }

  importDeletionJob(j: DeletionJob, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO deletion_jobs (id, tenant_seq, user_hash, status, requested_at, completed_at, purged_at, deleted_events, deleted_rejects, error)
        VALUES (${j.id}, ${j.tenantSeq}, ${j.userHash}, ${j.status}, ${new Date(j.requestedAt)}, ${date(j.completedAt)}, ${date(j.purgedAt)},
          ${j.deletedEvents}, ${j.deletedRejects}, ${j.error})
        ${overwrite
          ? sql`ON CONFLICT (id) DO UPDATE SET tenant_seq = EXCLUDED.tenant_seq, user_hash = EXCLUDED.user_hash, status = EXCLUDED.status,
                  requested_at = EXCLUDED.requested_at, completed_at = EXCLUDED.completed_at, purged_at = EXCLUDED.purged_at,
                  deleted_events = EXCLUDED.deleted_events, deleted_rejects = EXCLUDED.deleted_rejects, error = EXCLUDED.error,
                  lease_owner = NULL, lease_expires_at = NULL`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id`,
    );
  }

  importSession(s: SessionRecord, overwrite: boolean): Promise<boolean> {
    return this.written(
      (sql) => sql`
        INSERT INTO dashboard_sessions (id_hash, tenant_seq, token_hash, created_at, expires_at)
        VALUES (${s.idHash}, ${s.tenantSeq}, ${s.tokenHash}, ${new Date(s.createdAt)}, ${new Date(s.expiresAt)})
        ${overwrite
          ? sql`ON CONFLICT (id_hash) DO UPDATE SET tenant_seq = EXCLUDED.tenant_seq, token_hash = EXCLUDED.token_hash,
                  created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`
          : sql`ON CONFLICT DO NOTHING`}
        RETURNING id_hash`,
    );
  }

  /** Whether the statement wrote a row (it returns one per row written). */
  private async written(statement: (sql: PgSql) => Promise<readonly unknown[]>): Promise<boolean> {
    return (await this.db.run(statement)).length > 0;
  }
}
