import type { OverlayContent, OverlayType } from '@svc/protocol';

export interface CampaignRecord {
  tenantSeq: number;
  id: number;
  name: string;
  createdAt: number;
}

export interface SponsorRecord {
  tenantSeq: number;
  id: string;
  name: string;
  /** http(s) URL of the sponsor's logo, shown to viewers with its overlays. */
  logoUrl: string | null;
  createdAt: number;
}

export interface BroadcastRecord {
  tenantSeq: number;
  id: string;
  campaignId: number;
  title: string | null;
  createdAt: number;
}

export interface OverlayRecord {
  tenantSeq: number;
  broadcastId: string;
  id: string;
  type: OverlayType;
  content: OverlayContent;
  active: boolean;
  createdAt: number;
  updatedAt: number;
  /** When the overlay was last shown (null: never). */
  shownAt: number | null;
}

/** Campaign ids are BIGINT in storage and plain numbers in JSON: the largest both hold exactly. */
export const MAX_CAMPAIGN_ID = Number.MAX_SAFE_INTEGER;

/**
 * What the realtime gateway shows: campaigns, sponsors, broadcasts and their overlays.
 * Every call is scoped to one tenant; `create*` returns false when the id is taken.
 * Votes and entries, read from the events, are in `InteractionStore`.
 */
export interface ContentStore {
  createCampaign(record: CampaignRecord): Promise<boolean>;
  /**
   * An unused campaign id within 1..MAX_CAMPAIGN_ID: one past the largest, or, once the
   * largest is MAX_CAMPAIGN_ID, the smallest free one; null when every id is taken.
   */
  nextCampaignId(tenantSeq: number): Promise<number | null>;
  /**
   * Creates a campaign under the id `nextCampaignId` gives, drawn and taken at once: creates
   * without an id running at the same moment (on any node) get different ids. Answers the id, or
   * null when no id was free (every id taken, or the drawn one taken meanwhile by a create that
   * named it).
   */
  createCampaignWithNextId(tenantSeq: number, name: string, createdAt: number): Promise<number | null>;
  getCampaign(tenantSeq: number, id: number): Promise<CampaignRecord | null>;
  listCampaigns(tenantSeq: number): Promise<CampaignRecord[]>;
  renameCampaign(tenantSeq: number, id: number, name: string): Promise<CampaignRecord | null>;

  createSponsor(record: SponsorRecord): Promise<boolean>;
  getSponsor(tenantSeq: number, id: string): Promise<SponsorRecord | null>;
  listSponsors(tenantSeq: number): Promise<SponsorRecord[]>;
  /** Changes the fields given; `logoUrl: null` removes the logo. */
  updateSponsor(tenantSeq: number, id: string, patch: { name?: string; logoUrl?: string | null }): Promise<SponsorRecord | null>;

  createBroadcast(record: BroadcastRecord): Promise<boolean>;
  getBroadcast(tenantSeq: number, id: string): Promise<BroadcastRecord | null>;
  listBroadcasts(tenantSeq: number): Promise<BroadcastRecord[]>;
  updateBroadcast(tenantSeq: number, id: string, patch: { campaignId?: number; title?: string | null }): Promise<BroadcastRecord | null>;

  createOverlay(record: OverlayRecord): Promise<void>;
  getOverlay(tenantSeq: number, id: string): Promise<OverlayRecord | null>;
  listOverlays(tenantSeq: number, broadcastId: string): Promise<OverlayRecord[]>;
  /**
   * Changes the fields given. The overlay's `updatedAt` becomes `updatedAt`, or 1 ms after the
   * stored one when that is not earlier: each change of an overlay is later than the one before,
   * in the order the store made them, whatever the clocks of the nodes that asked. Viewers' rooms
   * order the changes they hear from several nodes by it.
   */
  updateOverlay(tenantSeq: number, id: string, patch: { content?: OverlayContent; active?: boolean; shownAt?: number }, updatedAt: number): Promise<OverlayRecord | null>;
  deleteOverlay(tenantSeq: number, id: string): Promise<boolean>;
  /** Every poll overlay of every tenant (the service keeps them in memory to check votes). */
  listPolls(): Promise<OverlayRecord[]>;
}
