import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { EventRow, MetaStore, Storage } from '../src';
import { CONTRACT_SETTINGS } from './test-settings';

const settings = CONTRACT_SETTINGS;

/** What the event store contract needs of a backend: `Storage` has it, and so has meta + a separate event store. */
export type EventBackend = Pick<Storage, 'meta' | 'events' | 'close'>;

/** A poll vote of `tenantSeq` with a fresh id, as the contract stores them; `overrides` change any field. */
export const contractRow = (tenantSeq: number, overrides: Partial<EventRow> = {}): EventRow => ({
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

/** Behaviour every storage backend must show; run once per backend, with `metaStoreContract`. */
export function storeContract(name: string, open: () => Promise<EventBackend>): void {
  const row = contractRow;

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

    it('pages events newest first when asked, both keys reversed', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'n', name: 'N', retentionMonths: 12, settings, createdAt: 0 });
      const rows = Array.from({ length: 25 }, (_, i) => row(t.seq, { timestampMs: Date.UTC(2026, 0, 1) + (i % 5) * 1000 }));
      await storage.events.commit({ events: rows, rejects: [] });
      const seen: string[] = [];
      let after: { timestampMs: number; eventId: string } | undefined;
      for (;;) {
        const page = await storage.events.queryEvents({ tenantSeq: t.seq }, { limit: 7, after, order: 'desc' });
        if (!page.length) break;
        seen.push(...page.map((e) => e.eventId));
        const last = page[page.length - 1]!;
        after = { timestampMs: Date.parse(last.timestamp), eventId: last.eventId };
      }
      const expected = [...rows]
        .sort((x, y) => y.timestampMs - x.timestampMs || (x.eventId < y.eventId ? 1 : -1))
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
  });
}

/** What the MetaStore contract needs of a backend: `Storage` has it, and so has a metadata-only one. */
export interface MetaBackend {
  meta: MetaStore;
  close(): Promise<void>;
}

/** Behaviour every MetaStore must show; `open` gives an empty database each time. */
export function metaStoreContract(name: string, open: () => Promise<MetaBackend>): void {
  describe(`${name} meta store contract`, () => {
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

    it('creates tenants with their own seq and finds them by id and by seq', async () => {
      const storage = await open();
      const createdAt = Date.UTC(2026, 10, 1, 12, 30, 15, 123);
      const a = await storage.meta.createTenant({ id: 'ta', name: 'A', retentionMonths: 6, settings, createdAt });
      const b = await storage.meta.createTenant({ id: 'tb', name: 'B', retentionMonths: 12, settings: { ...settings, defaultCampaignId: 2 }, createdAt });
      expect(a).toEqual({ seq: a.seq, id: 'ta', name: 'A', retentionMonths: 6, settings, createdAt });
      expect(b.seq).not.toBe(a.seq);
      expect(await storage.meta.getTenant('tb')).toEqual(b);
      expect(await storage.meta.getTenantBySeq(a.seq)).toEqual(a);
      expect(await storage.meta.getTenant('nobody')).toBeNull();
      expect(await storage.meta.getTenantBySeq(a.seq + b.seq + 100)).toBeNull();
      expect((await storage.meta.listTenants()).map((t) => t.id)).toEqual(a.seq < b.seq ? ['ta', 'tb'] : ['tb', 'ta']);
      await expect(storage.meta.createTenant({ id: 'ta', name: 'Again', retentionMonths: 12, settings, createdAt })).rejects.toThrow();
      expect(await storage.meta.listTenants()).toHaveLength(2);
      await storage.close();
    });

    it('changes only what a tenant patch names', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'u', name: 'U', retentionMonths: 12, settings, createdAt: 0 });
      expect(await storage.meta.updateTenant(t.seq, { name: 'U2' })).toEqual({ ...t, name: 'U2' });
      expect(await storage.meta.updateTenant(t.seq, { retentionMonths: 3 })).toEqual({ ...t, name: 'U2', retentionMonths: 3 });
      const changed = { ...settings, availableMarkets: ['FR', 'DE'], fallbackCountry: 'FR' };
      expect(await storage.meta.updateTenant(t.seq, { settings: changed })).toEqual({ ...t, name: 'U2', retentionMonths: 3, settings: changed });
      expect(await storage.meta.updateTenant(t.seq, {})).toEqual({ ...t, name: 'U2', retentionMonths: 3, settings: changed });
      expect(await storage.meta.getTenant('u')).toEqual({ ...t, name: 'U2', retentionMonths: 3, settings: changed });
      await expect(storage.meta.updateTenant(t.seq + 100, { name: 'X' })).rejects.toThrow();
      await storage.close();
    });

    it('finds and lists API keys, and a second revoke keeps the first time', async () => {
      const storage = await open();
      const t = await storage.meta.createTenant({ id: 'k', name: 'K', retentionMonths: 12, settings, createdAt: 0 });
      const other = await storage.meta.createTenant({ id: 'k2', name: 'K2', retentionMonths: 12, settings, createdAt: 0 });
      const key = (id: string, createdAt: number, tenantSeq = t.seq) => ({ id, tenantSeq, key: `svc_pk_${id}`, name: `key ${id}`, createdAt, revokedAt: null });
      for (const record of [key('ak_b', 20), key('ak_a', 20), key('ak_c', 10), key('ak_o', 5, other.seq)]) await storage.meta.createApiKey(record);
      expect(await storage.meta.findApiKey('svc_pk_ak_a')).toEqual(key('ak_a', 20));
      expect(await storage.meta.findApiKey('svc_pk_nobody')).toBeNull();
      expect((await storage.meta.listApiKeys(t.seq)).map((k) => k.id)).toEqual(['ak_c', 'ak_a', 'ak_b']);
      expect(await storage.meta.revokeApiKey(null, 'ak_c', 30)).toEqual({ ...key('ak_c', 10), revokedAt: 30 });
      expect((await storage.meta.revokeApiKey(t.seq, 'ak_c', 40))?.revokedAt).toBe(30);
      expect((await storage.meta.findApiKey('svc_pk_ak_c'))?.revokedAt).toBe(30);
      expect(await storage.meta.revokeApiKey(t.seq, 'ak_nobody', 40)).toBeNull();
      expect((await storage.meta.listApiKeys(other.seq)).map((k) => [k.id, k.revokedAt])).toEqual([['ak_o', null]]);
      await storage.close();
    });

    it('finds admin tokens by hash, lists them, and revokes them only within their tenant', async () => {
      const storage = await open();
      const a = await storage.meta.createTenant({ id: 'sa', name: 'A', retentionMonths: 12, settings, createdAt: 0 });
      const b = await storage.meta.createTenant({ id: 'sb', name: 'B', retentionMonths: 12, settings, createdAt: 0 });
      const token = (id: string, createdAt: number) => ({ id, tenantSeq: a.seq, tokenHash: `hash_${id}`, prefix: `svc_sk_${id}`, name: `token ${id}`, createdAt, revokedAt: null });
      await storage.meta.createAdminToken(token('st_2', 2));
      await storage.meta.createAdminToken(token('st_1', 1));
      expect(await storage.meta.findAdminTokenByHash('hash_st_2')).toEqual(token('st_2', 2));
      expect(await storage.meta.findAdminTokenByHash('hash_nobody')).toBeNull();
      expect((await storage.meta.listAdminTokens(a.seq)).map((x) => x.id)).toEqual(['st_1', 'st_2']);
      expect(await storage.meta.listAdminTokens(b.seq)).toEqual([]);
      expect(await storage.meta.revokeAdminToken(b.seq, 'st_1', 9)).toBeNull();
      expect((await storage.meta.findAdminTokenByHash('hash_st_1'))?.revokedAt).toBeNull();
      expect(await storage.meta.revokeAdminToken(a.seq, 'st_1', 9)).toEqual({ ...token('st_1', 1), revokedAt: 9 });
      expect((await storage.meta.revokeAdminToken(null, 'st_1', 12))?.revokedAt).toBe(9);
      await storage.close();
    });

    it('keeps broadcasts apart per tenant, and the first campaign wins within one call', async () => {
      const storage = await open();
      const a = await storage.meta.createTenant({ id: 'ba', name: 'A', retentionMonths: 12, settings, createdAt: 0 });
      const b = await storage.meta.createTenant({ id: 'bb', name: 'B', retentionMonths: 12, settings, createdAt: 0 });
      expect(await storage.meta.resolveBroadcasts(a.seq, [], 0)).toEqual(new Map());
      expect(await storage.meta.resolveBroadcasts(a.seq, [{ broadcastId: 'b1', campaignId: 3 }, { broadcastId: 'b1', campaignId: 4 }], 0)).toEqual(new Map([['b1', 3]]));
      expect(await storage.meta.resolveBroadcasts(b.seq, [{ broadcastId: 'b1', campaignId: 5 }], 0)).toEqual(new Map([['b1', 5]]));
      expect(await storage.meta.resolveBroadcasts(a.seq, [{ broadcastId: 'b1', campaignId: 6 }, { broadcastId: 'b2', campaignId: 2 ** 40 }], 0)).toEqual(
        new Map([['b1', 3], ['b2', 2 ** 40]]),
      );
      await storage.close();
    });
  });
}
