import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { EventRow, Storage, TenantSettings } from '../src';

/** Behaviour every storage backend must show; run once per backend. */
export function storeContract(name: string, open: () => Promise<Storage>): void {
  const settings: TenantSettings = {
    theme: { primaryColor: '#112233' },
    featureFlags: { lineup: true, payments: false, polls: true, contests: true, sponsorMoments: true },
    localization: { defaultLanguage: 'en' },
    availableMarkets: ['DE'],
    fallbackCountry: null,
    defaultCurrency: 'EUR',
    allowedOrigins: [],
    commerceApiKey: 'secret',
    defaultCampaignId: 1,
  };
  const row = (tenantSeq: number, overrides: Partial<EventRow> = {}): EventRow => ({
    tenantSeq,
    eventId: randomUUID(),
    event: 'poll.voted',
    userId: 'u1',
    sessionId: 'svc_a',
    broadcastId: 'b1',
    campaignId: 1,
    timestampMs: Date.UTC(2026, 10, 1, 12),
    receivedAtMs: Date.UTC(2026, 10, 1, 12, 0, 1),
    country: 'DE',
    orderId: null,
    sponsorId: null,
    total: null,
    items: null,
    data: '{"pollId":"p1"}',
    ...overrides,
  });

  describe(`${name} storage contract`, () => {
    it('stores an event once and reports the repeat as not inserted', async () => {
      const storage = await open();
      const tenant = await storage.meta.createTenant({ id: 't1', name: 'T1', retentionMonths: 12, settings, createdAt: 0 });
      const event = row(tenant.seq);
      const first = await storage.events.commit({ events: [event, { ...event }], rejects: [] });
      const second = await storage.events.commit({ events: [event], rejects: [] });
      expect(first.inserted.size).toBe(1);
      expect(second.inserted.size).toBe(0);
      expect(await storage.events.countEvents({ tenantSeq: tenant.seq })).toBe(1);
      const [stored] = await storage.events.queryEvents({ tenantSeq: tenant.seq }, { limit: 10 });
      expect(stored).toMatchObject({ eventId: event.eventId, userId: 'u1', timestamp: '2026-11-01T12:00:00.000Z', data: { pollId: 'p1' } });
      await storage.close();
    });

    it('keeps the same event id apart for two tenants', async () => {
      const storage = await open();
      const a = await storage.meta.createTenant({ id: 'a', name: 'A', retentionMonths: 12, settings, createdAt: 0 });
      const b = await storage.meta.createTenant({ id: 'b', name: 'B', retentionMonths: 12, settings, createdAt: 0 });
      const eventId = randomUUID();
      const outcome = await storage.events.commit({ events: [row(a.seq, { eventId }), row(b.seq, { eventId })], rejects: [] });
      expect(outcome.inserted.size).toBe(2);
      expect(await storage.events.countEvents({ tenantSeq: a.seq })).toBe(1);
      expect(await storage.events.countEvents({ tenantSeq: b.seq })).toBe(1);
      await storage.close();
    });

    it('pages events in timestamp then id order', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'p', name: 'P', retentionMonths: 12, settings, createdAt: 0 });
      const rows = Array.from({ length: 25 }, (_, i) => row(t.seq, { timestampMs: Date.UTC(2026, 0, 1) + (i % 5) * 1000 }));
      await storage.events.commit({ events: rows, rejects: [] });
      const seen: string[] = [];
      let after: { timestampMs: number; eventId: string } | undefined;
      for (;;) {
        const page = await storage.events.queryEvents({ tenantSeq: t.seq }, { limit: 7, after });
        if (!page.length) break;
        seen.push(...page.map((e) => e.eventId));
        const last = page[page.length - 1]!;
        after = { timestampMs: Date.parse(last.timestamp), eventId: last.eventId };
      }
      const expected = [...rows]
        .sort((x, y) => x.timestampMs - y.timestampMs || (x.eventId < y.eventId ? -1 : 1))
        .map((r) => r.eventId);
      expect(seen).toEqual(expected);
      await storage.close();
    });

    it('keeps rejected events with their reason, newest first', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'q', name: 'Q', retentionMonths: 12, settings, createdAt: 0 });
      const reject = (receivedAtMs: number, code: string) => ({
        tenantSeq: t.seq, id: randomUUID(), receivedAtMs, code, detail: `because ${code}`, errors: '[]',
        eventName: 'poll.voted', userId: null, payload: '{"event":"poll.voted"}',
      });
      await storage.events.commit({ events: [], rejects: [reject(1000, 'missing_field'), reject(2000, 'pii_detected')] });
      const listed = await storage.events.listRejected(t.seq, { limit: 10 });
      expect(listed.map((r) => r.code)).toEqual(['pii_detected', 'missing_field']);
      expect(listed[0]).toMatchObject({ detail: 'because pii_detected', payload: { event: 'poll.voted' } });
      const sameMs = Array.from({ length: 5 }, () => reject(3000, 'invalid_value'));
      await storage.events.commit({ events: [], rejects: sameMs });
      const first = await storage.events.listRejected(t.seq, { limit: 3 });
      const last = first[first.length - 1]!;
      const rest = await storage.events.listRejected(t.seq, { limit: 10, after: { receivedAtMs: Date.parse(last.receivedAt), id: last.id } });
      expect([...first, ...rest].map((r) => r.id).sort()).toEqual([...sameMs.map((r) => r.id), ...listed.map((r) => r.id)].sort());
      await storage.close();
    });

    it('registers a broadcast once and keeps its first campaign', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'r', name: 'R', retentionMonths: 12, settings, createdAt: 0 });
      const first = await storage.meta.resolveBroadcasts(t.seq, [{ broadcastId: 'b1', campaignId: 7 }], 0);
      const second = await storage.meta.resolveBroadcasts(t.seq, [{ broadcastId: 'b1', campaignId: 9 }, { broadcastId: 'b2', campaignId: 9 }], 0);
      expect(first.get('b1')).toBe(7);
      expect(second.get('b1')).toBe(7);
      expect(second.get('b2')).toBe(9);
      await storage.close();
    });

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

    it('revokes credentials only within their tenant', async () => {
      const storage = await open();
      const a = await storage.meta.createTenant({ id: 'ka', name: 'A', retentionMonths: 12, settings, createdAt: 0 });
      const b = await storage.meta.createTenant({ id: 'kb', name: 'B', retentionMonths: 12, settings, createdAt: 0 });
      await storage.meta.createApiKey({ id: 'ak_1', tenantSeq: a.seq, key: 'svc_pk_x', name: 'web', createdAt: 0, revokedAt: null });
      expect(await storage.meta.revokeApiKey(b.seq, 'ak_1', 5)).toBeNull();
      expect((await storage.meta.findApiKey('svc_pk_x'))?.revokedAt).toBeNull();
      expect((await storage.meta.revokeApiKey(a.seq, 'ak_1', 5))?.revokedAt).toBe(5);
      await storage.close();
    });
  });
}
