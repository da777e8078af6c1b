import type { DuckDBValue } from '@duckdb/node-api';
import type { OverlayContent, OverlayType } from '@svc/protocol';
import { MAX_CAMPAIGN_ID, type BroadcastRecord, type CampaignRecord, type ContentStore, type OverlayRecord, type SponsorRecord } from '../content-store';
import type { Interaction, InteractionStore } from '../interaction-store';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { nullableString } from './row-values';

const OVERLAY_COLUMNS =
  'tenant_seq, broadcast_id, id, type, content, active, epoch_ms(created_at) AS created_at_ms, epoch_ms(updated_at) AS updated_at_ms, epoch_ms(shown_at) AS shown_at_ms';
const BROADCAST_COLUMNS = 'tenant_seq, id, campaign_id, title, epoch_ms(created_at) AS created_at_ms';
const NAMED_COLUMNS = 'tenant_seq, id, name, epoch_ms(created_at) AS created_at_ms';
const SPONSOR_COLUMNS = `${NAMED_COLUMNS}, logo_url`;

/**
 * An unused campaign id of tenant $1 below $2 (MAX_CAMPAIGN_ID), as column `next`: one past the
 * largest, or once the largest is $2 (one past it would leave the range) the smallest gap.
 */
const NEXT_CAMPAIGN_ID = `WITH used AS (SELECT id FROM campaigns WHERE tenant_seq = $1)
  SELECT coalesce(
    (SELECT CASE WHEN max(id) < $2::BIGINT THEN max(id) + 1 END FROM used),
    (SELECT min(c.id + 1) FROM (SELECT 0::BIGINT AS id UNION ALL SELECT id FROM used) c
      WHERE c.id < $2::BIGINT AND NOT EXISTS (SELECT 1 FROM used u WHERE u.id = c.id + 1))
  ) AS next`;

/**
 * Campaigns, sponsors, broadcasts and overlays in the embedded database, and the votes and
 * entries read from its events.
 */
export class DuckDbContentStore implements ContentStore, InteractionStore {
  constructor(private readonly db: DuckDbDatabase) {}

  createCampaign(record: CampaignRecord): Promise<boolean> {
    return this.insertIfNew(
      'INSERT INTO campaigns VALUES ($1, $2, $3, epoch_ms($4::BIGINT)) ON CONFLICT DO NOTHING',
      [record.tenantSeq, record.id, record.name, record.createdAt],
    );
  }

  async nextCampaignId(tenantSeq: number): Promise<number | null> {
    const rows = await this.db.query(NEXT_CAMPAIGN_ID, [tenantSeq, MAX_CAMPAIGN_ID]);
    const next = rows[0]?.next;
    return next === null || next === undefined ? null : Number(next);
  }

  createCampaignWithNextId(tenantSeq: number, name: string, createdAt: number): Promise<number | null> {
    // Writes run one at a time in this process: nothing takes the id between draw and insert.
    return this.db.write(async (c) => {
      const rows = await this.db.writeQuery(
        c,
        `INSERT INTO campaigns SELECT $1, next, $3, epoch_ms($4::BIGINT) FROM (${NEXT_CAMPAIGN_ID}) WHERE next IS NOT NULL
         ON CONFLICT DO NOTHING RETURNING id`,
        [tenantSeq, MAX_CAMPAIGN_ID, name, createdAt],
      );
      return rows[0] ? Number(rows[0].id) : null;
    });
  }

  async getCampaign(tenantSeq: number, id: number): Promise<CampaignRecord | null> {
    const rows = await this.db.query(`SELECT ${NAMED_COLUMNS} FROM campaigns WHERE tenant_seq = $1 AND id = $2`, [tenantSeq, id]);
    return rows[0] ? toCampaign(rows[0]) : null;
  }

  async listCampaigns(tenantSeq: number): Promise<CampaignRecord[]> {
    return (await this.db.query(`SELECT ${NAMED_COLUMNS} FROM campaigns WHERE tenant_seq = $1 ORDER BY id`, [tenantSeq])).map(toCampaign);
  }

  async renameCampaign(tenantSeq: number, id: number, name: string): Promise<CampaignRecord | null> {
    const rows = await this.writeRows(`UPDATE campaigns SET name = $3 WHERE tenant_seq = $1 AND id = $2 RETURNING ${NAMED_COLUMNS}`, [tenantSeq, id, name]);
    return rows[0] ? toCampaign(rows[0]) : null;
  }

  createSponsor(record: SponsorRecord): Promise<boolean> {
    return this.insertIfNew(
      'INSERT INTO sponsors (tenant_seq, id, name, created_at, logo_url) VALUES ($1, $2, $3, epoch_ms($4::BIGINT), $5) ON CONFLICT DO NOTHING',
      [record.tenantSeq, record.id, record.name, record.createdAt, record.logoUrl],
    );
  }

  async getSponsor(tenantSeq: number, id: string): Promise<SponsorRecord | null> {
    const rows = await this.db.query(`SELECT ${SPONSOR_COLUMNS} FROM sponsors WHERE tenant_seq = $1 AND id = $2`, [tenantSeq, id]);
    return rows[0] ? toSponsor(rows[0]) : null;
  }

  async listSponsors(tenantSeq: number): Promise<SponsorRecord[]> {
    return (await this.db.query(`SELECT ${SPONSOR_COLUMNS} FROM sponsors WHERE tenant_seq = $1 ORDER BY id`, [tenantSeq])).map(toSponsor);
  }

  async updateSponsor(tenantSeq: number, id: string, patch: { name?: string; logoUrl?: string | null }): Promise<SponsorRecord | null> {
    const rows = await this.writeRows(
      `UPDATE sponsors SET name = coalesce($3, name), logo_url = CASE WHEN $4 THEN $5 ELSE logo_url END
       WHERE tenant_seq = $1 AND id = $2 RETURNING ${SPONSOR_COLUMNS}`,
      [tenantSeq, id, patch.name ?? null, patch.logoUrl !== undefined, patch.logoUrl ?? null],
    );
    return rows[0] ? toSponsor(rows[0]) : null;
  }

  createBroadcast(record: BroadcastRecord): Promise<boolean> {
    return this.insertIfNew(
      'INSERT INTO broadcasts VALUES ($1, $2, $3, $4, epoch_ms($5::BIGINT)) ON CONFLICT DO NOTHING',
      [record.tenantSeq, record.id, record.campaignId, record.title, record.createdAt],
    );
  }

  async getBroadcast(tenantSeq: number, id: string): Promise<BroadcastRecord | null> {
    const rows = await this.db.query(`SELECT ${BROADCAST_COLUMNS} FROM broadcasts WHERE tenant_seq = $1 AND id = $2`, [tenantSeq, id]);
    return rows[0] ? toBroadcast(rows[0]) : null;
  }

  async listBroadcasts(tenantSeq: number): Promise<BroadcastRecord[]> {
    const rows = await this.db.query(`SELECT ${BROADCAST_COLUMNS} FROM broadcasts WHERE tenant_seq = $1 ORDER BY created_at DESC, id`, [tenantSeq]);
    return rows.map(toBroadcast);
  }

  async updateBroadcast(
    tenantSeq: number,
    id: string,
    patch: { campaignId?: number; title?: string | null },
  ): Promise<BroadcastRecord | null> {
    const rows = await this.writeRows(
      `UPDATE broadcasts SET campaign_id = coalesce($3, campaign_id), title = CASE WHEN $4 THEN $5 ELSE title END
       WHERE tenant_seq = $1 AND id = $2 RETURNING ${BROADCAST_COLUMNS}`,
      [tenantSeq, id, patch.campaignId ?? null, patch.title !== undefined, patch.title ?? null],
    );
    return rows[0] ? toBroadcast(rows[0]) : null;
  }

  async createOverlay(record: OverlayRecord): Promise<void> {
    await this.insertOverlay('INSERT', record);
  }

  /**
   * Writes an overlay as given, in place of the one stored under its id if any (a copy of
   * another store's: `PollCopyingContentStore`): no moment without it, its times as they are.
   */
  async putOverlay(record: OverlayRecord): Promise<void> {
    await this.insertOverlay('INSERT OR REPLACE', record);
  }

  private async insertOverlay(verb: 'INSERT' | 'INSERT OR REPLACE', record: OverlayRecord): Promise<void> {
    await this.db.write((c) =>
      c.run(
        `${verb} INTO overlays (tenant_seq, broadcast_id, id, type, content, active, created_at, updated_at, shown_at)
         VALUES ($1, $2, $3, $4, $5, $6, epoch_ms($7::BIGINT), epoch_ms($8::BIGINT), epoch_ms($9::BIGINT))`, [
        record.tenantSeq,
        record.broadcastId,
        record.id,
        record.type,
        JSON.stringify(record.content),
        record.active,
        record.createdAt,
        record.updatedAt,
        record.shownAt,
      ]),
    );
  }

  async getOverlay(tenantSeq: number, id: string): Promise<OverlayRecord | null> {
    const rows = await this.db.query(`SELECT ${OVERLAY_COLUMNS} FROM overlays WHERE tenant_seq = $1 AND id = $2`, [tenantSeq, id]);
    return rows[0] ? toOverlay(rows[0]) : null;
  }

  async listOverlays(tenantSeq: number, broadcastId: string): Promise<OverlayRecord[]> {
    const rows = await this.db.query(
      `SELECT ${OVERLAY_COLUMNS} FROM overlays WHERE tenant_seq = $1 AND broadcast_id = $2 ORDER BY created_at, id`,
      [tenantSeq, broadcastId],
    );
    return rows.map(toOverlay);
  }

  async updateOverlay(
    tenantSeq: number,
    id: string,
    patch: { content?: OverlayContent; active?: boolean; shownAt?: number },
    updatedAt: number,
  ): Promise<OverlayRecord | null> {
    const rows = await this.writeRows(
      `UPDATE overlays SET content = coalesce($3, content), active = coalesce($4, active), updated_at = greatest(updated_at + INTERVAL 1 MILLISECOND, epoch_ms($5::BIGINT)),
         shown_at = coalesce(epoch_ms($6::BIGINT), shown_at)
       WHERE tenant_seq = $1 AND id = $2 RETURNING ${OVERLAY_COLUMNS}`,
      [tenantSeq, id, patch.content ? JSON.stringify(patch.content) : null, patch.active ?? null, updatedAt, patch.shownAt ?? null],
    );
    return rows[0] ? toOverlay(rows[0]) : null;
  }

  async deleteOverlay(tenantSeq: number, id: string): Promise<boolean> {
    return this.db.write(async (c) => Number((await c.run('DELETE FROM overlays WHERE tenant_seq = $1 AND id = $2', [tenantSeq, id])).rowsChanged) > 0);
  }

  async listPolls(): Promise<OverlayRecord[]> {
    return (await this.db.query(`SELECT ${OVERLAY_COLUMNS} FROM overlays WHERE type = 'poll' ORDER BY tenant_seq, created_at, id`)).map(toOverlay);
  }

  async listInteractions(tenantSeq: number, broadcastId: string): Promise<Interaction[]> {
    const sql = `SELECT event, coalesce(user_id, session_id) AS viewer, event_id::VARCHAR AS event_id, session_id, user_id,
              epoch_ms(ts) AS ts_ms, epoch_ms(received_at) AS received_ms,
              coalesce(json_extract_string(data, '$.pollId'), json_extract_string(data, '$.contestId')) AS overlay_id,
              TRY_CAST(json_extract(data, '$.optionIndex') AS INTEGER) AS option_index,
              json_extract_string(data, '$.optionSelected') AS option_selected
       FROM events
       WHERE tenant_seq = $1 AND broadcast_id = $2 AND event IN ('poll.voted', 'contest.entered')
       ORDER BY ts, event_id`;
    // A stored event DuckDB cannot read must not keep viewers out of the room (see undecodable-events).
    const rows = await this.db.queryTenantEvents(tenantSeq, sql, [tenantSeq, broadcastId]);
    return rows.map((row) => ({
      kind: row.event === 'poll.voted' ? 'vote' : 'entry',
      overlayId: String(row.overlay_id),
      viewer: String(row.viewer),
      eventId: String(row.event_id),
      sessionId: String(row.session_id),
      userId: nullableString(row.user_id),
      timestampMs: Number(row.ts_ms),
      receivedAtMs: Number(row.received_ms),
      optionIndex: row.option_index === null ? null : Number(row.option_index),
      optionSelected: nullableString(row.option_selected),
    }));
  }

  private insertIfNew(sql: string, values: DuckDBValue[]): Promise<boolean> {
    return this.db.write(async (c) => Number((await c.run(sql, values)).rowsChanged) > 0);
  }

  private writeRows(sql: string, values: DuckDBValue[]): Promise<Row[]> {
    return this.db.write((c) => this.db.writeQuery(c, sql, values));
  }
}

function toCampaign(row: Row): CampaignRecord {
  return { tenantSeq: Number(row.tenant_seq), id: Number(row.id), name: String(row.name), createdAt: Number(row.created_at_ms) };
}

function toSponsor(row: Row): SponsorRecord {
  return { tenantSeq: Number(row.tenant_seq), id: String(row.id), name: String(row.name), logoUrl: nullableString(row.logo_url), createdAt: Number(row.created_at_ms) };
}

function toBroadcast(row: Row): BroadcastRecord {
  return {
    tenantSeq: Number(row.tenant_seq),
    id: String(row.id),
    campaignId: Number(row.campaign_id),
    title: nullableString(row.title),
    createdAt: Number(row.created_at_ms),
  };
}

function toOverlay(row: Row): OverlayRecord {
  return {
    tenantSeq: Number(row.tenant_seq),
    broadcastId: String(row.broadcast_id),
    id: String(row.id),
    type: String(row.type) as OverlayType,
    content: JSON.parse(String(row.content)) as OverlayContent,
    active: Boolean(row.active),
    createdAt: Number(row.created_at_ms),
    updatedAt: Number(row.updated_at_ms),
    shownAt: row.shown_at_ms === null || row.shown_at_ms === undefined ? null : Number(row.shown_at_ms),
  };
}
