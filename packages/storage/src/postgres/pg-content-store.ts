import type { OverlayContent, OverlayType } from '@svc/protocol';
import { MAX_CAMPAIGN_ID, type BroadcastRecord, type CampaignRecord, type ContentStore, type OverlayRecord, type SponsorRecord } from '../content-store';
import type { PgDatabase, PgSql, PgTransaction } from './pg-database';

/** Key of the advisory lock (with the tenant's seq) that creates without a campaign id take. */
export const CAMPAIGN_CREATE_LOCK_KEY = 1_907_531_065;

/**
 * An unused campaign id of the tenant, as column `next`: one past the largest, or once the
 * largest is MAX_CAMPAIGN_ID (one past it would leave the range) the smallest gap; null when
 * every id is taken.
 */
const nextCampaignId = (sql: PgSql | PgTransaction, tenantSeq: number) => sql`
  WITH used AS (SELECT id FROM campaigns WHERE tenant_seq = ${tenantSeq})
  SELECT coalesce(
    (SELECT CASE WHEN max(id) < ${MAX_CAMPAIGN_ID}::bigint THEN max(id) + 1 END FROM used),
    (SELECT min(c.id + 1) FROM (SELECT 0::bigint AS id UNION ALL SELECT id FROM used) c
      WHERE c.id < ${MAX_CAMPAIGN_ID}::bigint AND NOT EXISTS (SELECT 1 FROM used u WHERE u.id = c.id + 1))
  ) AS next`;

interface CampaignRow {
  tenant_seq: number;
  /** bigint: text from the client. */
  id: string;
  name: string;
  created_at: Date;
}

interface SponsorRow {
  tenant_seq: number;
  id: string;
  name: string;
  logo_url: string | null;
  created_at: Date;
}

interface BroadcastRow {
  tenant_seq: number;
  id: string;
  campaign_id: string;
  title: string | null;
  created_at: Date;
}

interface OverlayRow {
  tenant_seq: number;
  broadcast_id: string;
  id: string;
  type: string;
  content: OverlayContent;
  active: boolean;
  created_at: Date;
  updated_at: Date;
  shown_at: Date | null;
}

/**
 * Campaigns, sponsors, broadcasts and overlays in PostgreSQL, shared by every node. A create
 * that meets an existing id (another node's included) inserts nothing and answers false.
 */
export class PgContentStore implements ContentStore {
  constructor(private readonly db: PgDatabase) {}

  async createCampaign(record: CampaignRecord): Promise<boolean> {
    // A node creating the same id at the same moment waits on the key, then inserts nothing.
    const rows = await this.db.run(
      (sql) => sql`
        INSERT INTO campaigns (tenant_seq, id, name, created_at)
        VALUES (${record.tenantSeq}, ${record.id}::bigint, ${record.name}, ${new Date(record.createdAt)})
        ON CONFLICT DO NOTHING
        RETURNING id`,
    );
    return rows.length > 0;
  }

  async nextCampaignId(tenantSeq: number): Promise<number | null> {
    const [row] = await this.db.run((sql) => sql<{ next: string | null }[]>`${nextCampaignId(sql, tenantSeq)}`);
    return row?.next === null || row?.next === undefined ? null : Number(row.next);
  }

  createCampaignWithNextId(tenantSeq: number, name: string, createdAt: number): Promise<number | null> {
    // Creates without an id queue on the tenant's lock, so that each draws after the last one
    // committed (each statement reads what was committed before it began).
    return this.db.transaction(async (sql) => {
      await sql`SELECT pg_advisory_xact_lock(${CAMPAIGN_CREATE_LOCK_KEY}::integer, ${tenantSeq}::integer)`;
      const [row] = await sql<{ id: string }[]>`
        INSERT INTO campaigns (tenant_seq, id, name, created_at)
        SELECT ${tenantSeq}, next, ${name}, ${new Date(createdAt)} FROM (${nextCampaignId(sql, tenantSeq)}) n WHERE next IS NOT NULL
        ON CONFLICT DO NOTHING
        RETURNING id`;
      return row ? Number(row.id) : null;
    });
  }

  async getCampaign(tenantSeq: number, id: number): Promise<CampaignRecord | null> {
    const [row] = await this.db.run((sql) => sql<CampaignRow[]>`SELECT * FROM campaigns WHERE tenant_seq = ${tenantSeq} AND id = ${id}::bigint`);
    return row ? toCampaign(row) : null;
  }

  async listCampaigns(tenantSeq: number): Promise<CampaignRecord[]> {
    return (await this.db.run((sql) => sql<CampaignRow[]>`SELECT * FROM campaigns WHERE tenant_seq = ${tenantSeq} ORDER BY id`)).map(toCampaign);
  }

  async renameCampaign(tenantSeq: number, id: number, name: string): Promise<CampaignRecord | null> {
    const [row] = await this.db.run(
      (sql) => sql<CampaignRow[]>`UPDATE campaigns SET name = ${name} WHERE tenant_seq = ${tenantSeq} AND id = ${id}::bigint RETURNING *`,
    );
    return row ? toCampaign(row) : null;
  }

  async createSponsor(record: SponsorRecord): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
        INSERT INTO sponsors (tenant_seq, id, name, created_at, logo_url)
        VALUES (${record.tenantSeq}, ${record.id}, ${record.name}, ${new Date(record.createdAt)}, ${record.logoUrl})
        ON CONFLICT DO NOTHING
        RETURNING id`,
    );
    return rows.length > 0;
  }

  async getSponsor(tenantSeq: number, id: string): Promise<SponsorRecord | null> {
    const [row] = await this.db.run((sql) => sql<SponsorRow[]>`SELECT * FROM sponsors WHERE tenant_seq = ${tenantSeq} AND id = ${id}`);
    return row ? toSponsor(row) : null;
  }

  async listSponsors(tenantSeq: number): Promise<SponsorRecord[]> {
    const rows = await this.db.run((sql) => sql<SponsorRow[]>`SELECT * FROM sponsors WHERE tenant_seq = ${tenantSeq} ORDER BY id COLLATE "C"`);
    return rows.map(toSponsor);
  }

  async updateSponsor(tenantSeq: number, id: string, patch: { name?: string; logoUrl?: string | null }): Promise<SponsorRecord | null> {
    // A field the patch leaves out keeps its value; `logoUrl: null` is a value (no logo).
    const [row] = await this.db.run(
      (sql) => sql<SponsorRow[]>`
        UPDATE sponsors SET
          name = coalesce(${patch.name ?? null}::text, name),
          logo_url = CASE WHEN ${patch.logoUrl !== undefined}::boolean THEN ${patch.logoUrl ?? null}::text ELSE logo_url END
        WHERE tenant_seq = ${tenantSeq} AND id = ${id}
        RETURNING *`,
    );
    return row ? toSponsor(row) : null;
  }

  async createBroadcast(record: BroadcastRecord): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
        INSERT INTO broadcasts (tenant_seq, id, campaign_id, title, created_at)
        VALUES (${record.tenantSeq}, ${record.id}, ${record.campaignId}::bigint, ${record.title}, ${new Date(record.createdAt)})
        ON CONFLICT DO NOTHING
        RETURNING id`,
    );
    return rows.length > 0;
  }

  async getBroadcast(tenantSeq: number, id: string): Promise<BroadcastRecord | null> {
    const [row] = await this.db.run((sql) => sql<BroadcastRow[]>`SELECT * FROM broadcasts WHERE tenant_seq = ${tenantSeq} AND id = ${id}`);
    return row ? toBroadcast(row) : null;
  }

  async listBroadcasts(tenantSeq: number): Promise<BroadcastRecord[]> {
    const rows = await this.db.run(
      (sql) => sql<BroadcastRow[]>`SELECT * FROM broadcasts WHERE tenant_seq = ${tenantSeq} ORDER BY created_at DESC, id COLLATE "C"`,
    );
    return rows.map(toBroadcast);
  }

  async updateBroadcast(tenantSeq: number, id: string, patch: { campaignId?: number; title?: string | null }): Promise<BroadcastRecord | null> {
    const [row] = await this.db.run(
      (sql) => sql<BroadcastRow[]>`
        UPDATE broadcasts SET
          campaign_id = coalesce(${patch.campaignId ?? null}::bigint, campaign_id),
          title = CASE WHEN ${patch.title !== undefined}::boolean THEN ${patch.title ?? null}::text ELSE title END
        WHERE tenant_seq = ${tenantSeq} AND id = ${id}
        RETURNING *`,
    );
    return row ? toBroadcast(row) : null;
  }

  // Content goes in as JSON text cast on the server: a parameter the server describes as `json`
  // would be JSON-encoded once more by the client, storing a string.
  async createOverlay(record: OverlayRecord): Promise<void> {
    await this.db.run(
      (sql) => sql`
        INSERT INTO overlays (tenant_seq, broadcast_id, id, type, content, active, created_at, updated_at, shown_at)
        VALUES (${record.tenantSeq}, ${record.broadcastId}, ${record.id}, ${record.type}, ${JSON.stringify(record.content)}::text::json,
          ${record.active}, ${new Date(record.createdAt)}, ${new Date(record.updatedAt)}, ${record.shownAt === null ? null : new Date(record.shownAt)}::timestamptz)`,
    );
  }

  async getOverlay(tenantSeq: number, id: string): Promise<OverlayRecord | null> {
    const [row] = await this.db.run((sql) => sql<OverlayRow[]>`SELECT * FROM overlays WHERE tenant_seq = ${tenantSeq} AND id = ${id}`);
    return row ? toOverlay(row) : null;
  }

  async listOverlays(tenantSeq: number, broadcastId: string): Promise<OverlayRecord[]> {
    const rows = await this.db.run(
      (sql) => sql<OverlayRow[]>`
        SELECT * FROM overlays WHERE tenant_seq = ${tenantSeq} AND broadcast_id = ${broadcastId} ORDER BY created_at, id COLLATE "C"`,
    );
    return rows.map(toOverlay);
  }

  async updateOverlay(
    tenantSeq: number,
    id: string,
    patch: { content?: OverlayContent; active?: boolean; shownAt?: number },
    updatedAt: number,
  ): Promise<OverlayRecord | null> {
    // A hide or a content change keeps the time the overlay was last shown.
    const [row] = await this.db.run(
      (sql) => sql<OverlayRow[]>`
        UPDATE overlays SET
          content = coalesce(${patch.content === undefined ? null : JSON.stringify(patch.content)}::text::json, content),
          active = coalesce(${patch.active ?? null}::boolean, active),
          updated_at = greatest(updated_at + interval '1 millisecond', ${new Date(updatedAt)}::timestamptz),
          shown_at = coalesce(${patch.shownAt === undefined ? null : new Date(patch.shownAt)}::timestamptz, shown_at)
        WHERE tenant_seq = ${tenantSeq} AND id = ${id}
        RETURNING *`,
    );
    return row ? toOverlay(row) : null;
  }

  async deleteOverlay(tenantSeq: number, id: string): Promise<boolean> {
    const rows = await this.db.run((sql) => sql`DELETE FROM overlays WHERE tenant_seq = ${tenantSeq} AND id = ${id} RETURNING id`);
    return rows.length > 0;
  }

  async listPolls(): Promise<OverlayRecord[]> {
    const rows = await this.db.run(
      (sql) => sql<OverlayRow[]>`SELECT * FROM overlays WHERE type = 'poll' ORDER BY tenant_seq, created_at, id COLLATE "C"`,
    );
    return rows.map(toOverlay);
  }
}

function toCampaign(row: CampaignRow): CampaignRecord {
  return { tenantSeq: row.tenant_seq, id: Number(row.id), name: row.name, createdAt: row.created_at.getTime() };
}

function toSponsor(row: SponsorRow): SponsorRecord {
  return { tenantSeq: row.tenant_seq, id: row.id, name: row.name, logoUrl: row.logo_url, createdAt: row.created_at.getTime() };
}

function toBroadcast(row: BroadcastRow): BroadcastRecord {
  return { tenantSeq: row.tenant_seq, id: row.id, campaignId: Number(row.campaign_id), title: row.title, createdAt: row.created_at.getTime() };
}

function toOverlay(row: OverlayRow): OverlayRecord {
  return {
    tenantSeq: row.tenant_seq,
    broadcastId: row.broadcast_id,
    id: row.id,
    type: row.type as OverlayType,
    content: row.content,
    active: row.active,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
    shownAt: row.shown_at?.getTime() ?? null,
  };
}
