import { describe, expect, it } from 'vitest';
import { MAX_CAMPAIGN_ID, type ContentStore, type MetaStore, type OverlayRecord } from '../src';
import { CONTRACT_SETTINGS } from './test-settings';

const settings = CONTRACT_SETTINGS;

/** What the ContentStore contract needs of a backend: tenants come from its MetaStore. */
export interface ContentBackend {
  meta: MetaStore;
  content: ContentStore;
  close(): Promise<void>;
}

/** Behaviour every ContentStore must show; `open` gives an empty database each time. */
export function contentStoreContract(name: string, open: () => Promise<ContentBackend>): void {
  describe(`${name} content store contract`, () => {
    it("keeps an overlay's last show time and a sponsor's logo, and changes only what a patch names", async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'c', name: 'C', retentionMonths: 12, settings, createdAt: 0 });
      expect(await storage.content.createSponsor({ tenantSeq: t.seq, id: 'acme', name: 'Acme', logoUrl: 'https://cdn.example/a.png', createdAt: 1 })).toBe(true);
      expect(await storage.content.createSponsor({ tenantSeq: t.seq, id: 'bolt', name: 'Bolt', logoUrl: null, createdAt: 1 })).toBe(true);
      expect(await storage.content.getSponsor(t.seq, 'acme')).toMatchObject({ name: 'Acme', logoUrl: 'https://cdn.example/a.png' });
      expect(await storage.content.updateSponsor(t.seq, 'acme', { name: 'Acme 2' })).toMatchObject({ name: 'Acme 2', logoUrl: 'https://cdn.example/a.png' });
      expect(await storage.content.updateSponsor(t.seq, 'acme', { logoUrl: null })).toMatchObject({ name: 'Acme 2', logoUrl: null });
      expect(await storage.content.updateSponsor(t.seq, 'nobody', { name: 'X' })).toBeNull();
      expect((await storage.content.listSponsors(t.seq)).map((s) => [s.id, s.logoUrl])).toEqual([['acme', null], ['bolt', null]]);

      const content = { type: 'lineup' as const, items: [{ title: 'Kick-off' }] };
      await storage.content.createOverlay({ tenantSeq: t.seq, broadcastId: 'b1', id: 'line_1', type: 'lineup', content, active: false, createdAt: 10, updatedAt: 10, shownAt: null });
      expect((await storage.content.getOverlay(t.seq, 'line_1'))?.shownAt).toBeNull();
      expect(await storage.content.updateOverlay(t.seq, 'line_1', { active: true, shownAt: 20 }, 20)).toMatchObject({ active: true, shownAt: 20 });
      // A hide or a content change keeps the time it was last shown.
      expect(await storage.content.updateOverlay(t.seq, 'line_1', { active: false }, 30)).toMatchObject({ active: false, shownAt: 20, updatedAt: 30 });
      expect(await storage.content.updateOverlay(t.seq, 'line_1', { content }, 40)).toMatchObject({ shownAt: 20 });
      expect((await storage.content.listOverlays(t.seq, 'b1')).map((o) => o.shownAt)).toEqual([20]);
      await storage.close();
    });

    it("orders an overlay's changes by updatedAt in the order they were stored, whatever time the caller gave", async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'o', name: 'O', retentionMonths: 12, settings, createdAt: 0 });
      const content = { type: 'lineup' as const, items: [{ title: 'Kick-off' }] };
      await storage.content.createOverlay({ tenantSeq: t.seq, broadcastId: 'b1', id: 'line_1', type: 'lineup', content, active: false, createdAt: 1_000, updatedAt: 1_000, shownAt: null });
      // A node whose clock is behind, then one whose clock is ahead, then the first again.
      expect(await storage.content.updateOverlay(t.seq, 'line_1', { active: true, shownAt: 900 }, 900)).toMatchObject({ updatedAt: 1_001, shownAt: 900 });
      expect(await storage.content.updateOverlay(t.seq, 'line_1', { active: false }, 1_001)).toMatchObject({ updatedAt: 1_002 });
      expect(await storage.content.updateOverlay(t.seq, 'line_1', { active: true }, 5_000)).toMatchObject({ updatedAt: 5_000 });
      expect(await storage.content.updateOverlay(t.seq, 'line_1', { active: false }, 1_100)).toMatchObject({ updatedAt: 5_001, active: false });
      expect((await storage.content.getOverlay(t.seq, 'line_1'))?.updatedAt).toBe(5_001);
      await storage.close();
    });

    it('creates a campaign once per id and tenant, lists by id, and renames it', async () => {
      const storage = await open();
      const a = await storage.meta.createTenant({ id: 'ca', name: 'A', retentionMonths: 12, settings, createdAt: 0 });
      const b = await storage.meta.createTenant({ id: 'cb', name: 'B', retentionMonths: 12, settings, createdAt: 0 });
      const createdAt = Date.UTC(2026, 10, 2, 9, 15, 30, 250);
      expect(await storage.content.createCampaign({ tenantSeq: a.seq, id: 10, name: 'Ten', createdAt })).toBe(true);
      expect(await storage.content.createCampaign({ tenantSeq: a.seq, id: 2 ** 40, name: 'Big', createdAt })).toBe(true);
      expect(await storage.content.createCampaign({ tenantSeq: a.seq, id: 10, name: 'Again', createdAt: createdAt + 1 })).toBe(false);
      expect(await storage.content.createCampaign({ tenantSeq: b.seq, id: 10, name: 'Ten of B', createdAt })).toBe(true);
      expect(await storage.content.getCampaign(a.seq, 10)).toEqual({ tenantSeq: a.seq, id: 10, name: 'Ten', createdAt });
      expect(await storage.content.getCampaign(a.seq, 11)).toBeNull();
      // The tenant's default campaign (1) is made with the tenant.
      expect((await storage.content.listCampaigns(a.seq)).map((c) => [c.id, c.name])).toEqual([[1, 'Default campaign'], [10, 'Ten'], [2 ** 40, 'Big']]);
      expect(await storage.content.renameCampaign(a.seq, 10, 'Renamed')).toEqual({ tenantSeq: a.seq, id: 10, name: 'Renamed', createdAt });
      expect(await storage.content.renameCampaign(a.seq, 11, 'Nobody')).toBeNull();
      expect((await storage.content.getCampaign(b.seq, 10))?.name).toBe('Ten of B');
      await storage.close();
    });

    it('draws the next campaign id past the largest, then from the smallest gap once the largest is taken', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'cn', name: 'N', retentionMonths: 12, settings, createdAt: 0 });
      const other = await storage.meta.createTenant({ id: 'co', name: 'O', retentionMonths: 12, settings, createdAt: 0 });
      expect(await storage.content.nextCampaignId(t.seq)).toBe(2);
      await storage.content.createCampaign({ tenantSeq: t.seq, id: 7, name: 'Seven', createdAt: 0 });
      expect(await storage.content.nextCampaignId(t.seq)).toBe(8);
      await storage.content.createCampaign({ tenantSeq: t.seq, id: MAX_CAMPAIGN_ID - 1, name: 'Almost last', createdAt: 0 });
      expect(await storage.content.nextCampaignId(t.seq)).toBe(MAX_CAMPAIGN_ID);
      await storage.content.createCampaign({ tenantSeq: t.seq, id: MAX_CAMPAIGN_ID, name: 'Last', createdAt: 0 });
      expect(await storage.content.nextCampaignId(t.seq)).toBe(2);
      await storage.content.createCampaign({ tenantSeq: t.seq, id: 2, name: 'Two', createdAt: 0 });
      expect(await storage.content.nextCampaignId(t.seq)).toBe(3);
      // Another tenant's ids are its own.
      expect(await storage.content.nextCampaignId(other.seq)).toBe(2);
      expect((await storage.content.getCampaign(t.seq, MAX_CAMPAIGN_ID))?.id).toBe(MAX_CAMPAIGN_ID);
      await storage.close();
    });

    it('creates campaigns without an id under ids drawn and taken at once, each its own, and none once every id is taken', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'cw', name: 'W', retentionMonths: 12, settings, createdAt: 0 });
      const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => storage.content.createCampaignWithNextId(t.seq, `C${i}`, 1_000)));
      expect([...ids].sort((x, y) => x! - y!)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      for (const [i, id] of ids.entries()) expect(await storage.content.getCampaign(t.seq, id!)).toEqual({ tenantSeq: t.seq, id, name: `C${i}`, createdAt: 1_000 });
      await storage.content.createCampaign({ tenantSeq: t.seq, id: MAX_CAMPAIGN_ID, name: 'Last', createdAt: 0 });
      expect(await storage.content.createCampaignWithNextId(t.seq, 'Gap', 0)).toBe(12);
      await storage.close();
    });

    it('creates a sponsor once per id, keeping the first, and lists sponsors in byte order of their ids', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'sp', name: 'S', retentionMonths: 12, settings, createdAt: 0 });
      const other = await storage.meta.createTenant({ id: 'sq', name: 'Q', retentionMonths: 12, settings, createdAt: 0 });
      for (const id of ['a', 'B', '_', 'Ä']) {
        expect(await storage.content.createSponsor({ tenantSeq: t.seq, id, name: `Sponsor ${id}`, logoUrl: null, createdAt: 5 })).toBe(true);
      }
      expect(await storage.content.createSponsor({ tenantSeq: t.seq, id: 'a', name: 'Other', logoUrl: 'https://cdn.example/o.png', createdAt: 6 })).toBe(false);
      expect(await storage.content.createSponsor({ tenantSeq: other.seq, id: 'a', name: 'A of Q', logoUrl: null, createdAt: 6 })).toBe(true);
      expect(await storage.content.getSponsor(t.seq, 'a')).toEqual({ tenantSeq: t.seq, id: 'a', name: 'Sponsor a', logoUrl: null, createdAt: 5 });
      expect(await storage.content.getSponsor(t.seq, 'nobody')).toBeNull();
      expect((await storage.content.listSponsors(t.seq)).map((s) => s.id)).toEqual(['B', '_', 'a', 'Ä']);
      expect(await storage.content.updateSponsor(t.seq, 'B', { logoUrl: 'https://cdn.example/b.png' })).toEqual({
        tenantSeq: t.seq, id: 'B', name: 'Sponsor B', logoUrl: 'https://cdn.example/b.png', createdAt: 5,
      });
      expect(await storage.content.updateSponsor(t.seq, 'B', {})).toMatchObject({ name: 'Sponsor B', logoUrl: 'https://cdn.example/b.png' });
      expect((await storage.content.getSponsor(other.seq, 'a'))?.name).toBe('A of Q');
      await storage.close();
    });

    it('creates a broadcast once per id, lists the newest first, and changes only what a patch names', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'bc', name: 'B', retentionMonths: 12, settings, createdAt: 0 });
      const broadcast = (id: string, createdAt: number, title: string | null = null) => ({ tenantSeq: t.seq, id, campaignId: 1, title, createdAt });
      expect(await storage.content.createBroadcast(broadcast('old', 10, 'Old'))).toBe(true);
      expect(await storage.content.createBroadcast(broadcast('a', 20))).toBe(true);
      expect(await storage.content.createBroadcast(broadcast('B', 20))).toBe(true);
      expect(await storage.content.createBroadcast(broadcast('old', 30, 'Again'))).toBe(false);
      expect(await storage.content.getBroadcast(t.seq, 'old')).toEqual(broadcast('old', 10, 'Old'));
      expect(await storage.content.getBroadcast(t.seq, 'nobody')).toBeNull();
      expect((await storage.content.listBroadcasts(t.seq)).map((b) => b.id)).toEqual(['B', 'a', 'old']);
      expect(await storage.content.updateBroadcast(t.seq, 'old', { campaignId: 2 ** 40 })).toEqual({ ...broadcast('old', 10, 'Old'), campaignId: 2 ** 40 });
      expect(await storage.content.updateBroadcast(t.seq, 'old', { title: null })).toEqual({ ...broadcast('old', 10), campaignId: 2 ** 40 });
      expect(await storage.content.updateBroadcast(t.seq, 'old', { title: 'New' })).toEqual({ ...broadcast('old', 10, 'New'), campaignId: 2 ** 40 });
      expect(await storage.content.updateBroadcast(t.seq, 'nobody', { title: 'X' })).toBeNull();
      await storage.close();
    });

    it('keeps overlay content as written, lists overlays oldest first, updates, deletes, and lists every poll', async () => {
      const storage = await open();
      const a = await storage.meta.createTenant({ id: 'oa', name: 'A', retentionMonths: 12, settings, createdAt: 0 });
      const b = await storage.meta.createTenant({ id: 'ob', name: 'B', retentionMonths: 12, settings, createdAt: 0 });
      const poll = (tenantSeq: number, id: string, createdAt: number): OverlayRecord => ({
        tenantSeq, broadcastId: 'b1', id, type: 'poll', content: { type: 'poll', question: `Which ${id}? “ü” \u{1F600}`, options: ['x', 'y'], closesAt: '2026-11-02T10:00:00.000Z' },
        active: true, createdAt, updatedAt: createdAt, shownAt: createdAt,
      });
      const product: OverlayRecord = {
        tenantSeq: a.seq, broadcastId: 'b1', id: 'prod', type: 'product',
        // Keys in an order of their own: read back in that order.
        content: { url: 'https://shop.example/p', type: 'product', price: 12.5, name: 'Scarf', currency: 'EUR', placement: 'banner' },
        active: false, createdAt: 15, updatedAt: 15, shownAt: null,
      };
      for (const record of [poll(a.seq, 'pa', 20), poll(a.seq, 'pB', 20), poll(a.seq, 'p0', 10), product, poll(b.seq, 'pq', 5)]) await storage.content.createOverlay(record);
      await storage.content.createOverlay({ ...product, broadcastId: 'b2', id: 'elsewhere' });
      await expect(storage.content.createOverlay({ ...product, active: true })).rejects.toThrow();

      const stored = await storage.content.getOverlay(a.seq, 'prod');
      expect(stored).toEqual(product);
      expect(Object.keys(stored!.content)).toEqual(['url', 'type', 'price', 'name', 'currency', 'placement']);
      expect(await storage.content.getOverlay(b.seq, 'prod')).toBeNull();
      expect((await storage.content.listOverlays(a.seq, 'b1')).map((o) => o.id)).toEqual(['p0', 'prod', 'pB', 'pa']);
      expect(await storage.content.getOverlay(a.seq, 'pa')).toEqual(poll(a.seq, 'pa', 20));

      const changed = { type: 'poll' as const, question: 'Changed?', options: ['yes', 'no'] };
      expect(await storage.content.updateOverlay(a.seq, 'pa', { content: changed }, 50)).toEqual({ ...poll(a.seq, 'pa', 20), content: changed, updatedAt: 50 });
      expect(await storage.content.updateOverlay(a.seq, 'prod', { shownAt: 60 }, 60)).toEqual({ ...product, updatedAt: 60, shownAt: 60 });
      expect(await storage.content.updateOverlay(b.seq, 'pa', { active: false }, 70)).toBeNull();
      expect((await storage.content.getOverlay(a.seq, 'pa'))?.active).toBe(true);

      expect(await storage.content.deleteOverlay(b.seq, 'p0')).toBe(false);
      expect(await storage.content.deleteOverlay(a.seq, 'p0')).toBe(true);
      expect(await storage.content.deleteOverlay(a.seq, 'p0')).toBe(false);
      expect(await storage.content.getOverlay(a.seq, 'p0')).toBeNull();

      const polls = await storage.content.listPolls();
      const expectedOrder = a.seq < b.seq ? [[a.seq, 'pB'], [a.seq, 'pa'], [b.seq, 'pq']] : [[b.seq, 'pq'], [a.seq, 'pB'], [a.seq, 'pa']];
      expect(polls.map((o) => [o.tenantSeq, o.id])).toEqual(expectedOrder);
      expect(polls.find((o) => o.id === 'pa')?.content).toEqual(changed);
      await storage.close();
    });
  });
}
