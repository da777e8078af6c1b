import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listValue } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { DuckDbContentStore, DuckDbDatabase, DuckDbEventStore, hashUserId, openEmbeddedStorage, type OverlayRecord } from '../src';
import { CHECKPOINT_THRESHOLD_MIB } from '../src/duckdb/duckdb-database';
import { metaStoreContract, storeContract } from './store-contract';
import { webhookEndpointStoreContract } from './webhook-endpoint-store-contract';
import { deletionJobStoreContract } from './deletion-job-store-contract';
import { sessionStoreContract } from './session-store-contract';
import { contentStoreContract } from './content-store-contract';

const freshDir = () => mkdtempSync(join(tmpdir(), 'svc-store-'));

storeContract('DuckDB', () => openEmbeddedStorage(freshDir()));
metaStoreContract('DuckDB', () => openEmbeddedStorage(freshDir()));
webhookEndpointStoreContract('DuckDB', async () => {
  const storage = await openEmbeddedStorage(freshDir());
  return { endpoints: storage.webhookEndpoints, close: () => storage.close() };
});
deletionJobStoreContract('DuckDB', () => openEmbeddedStorage(freshDir()));

describe('DuckDB erasure of a user', () => {
  it("deletes the user's events and rejects, and nothing more when run again, by userId or by hash", async () => {
    const storage = await openEmbeddedStorage(freshDir());
    const tenant = await storage.meta.createTenant({
      id: 'x', name: 'X', retentionMonths: 12, createdAt: 0,
      settings: { theme: { primaryColor: '#000000' }, featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true }, localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR', allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1 },
    });
    const event = (n: number, userId: string) => ({ tenantSeq: tenant.seq, eventId: `0190a6a0-0000-7000-8000-${String(n).padStart(12, '0')}`, event: 'broadcast.joined', userId, sessionId: 'svc_s', broadcastId: 'b', campaignId: 1, timestampMs: n, receivedAtMs: n, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}' });
    const reject = (n: number, userId: string) => ({ tenantSeq: tenant.seq, id: `0190a6a0-0000-7000-8000-${String(n).padStart(12, '0')}`, receivedAtMs: n, code: 'unknown_event', detail: 'x', errors: '[]', eventName: null, userId, payload: '{}' });
    await storage.events.commit({ events: [event(1, 'gone'), event(2, 'gone'), event(3, 'kept')], rejects: [reject(4, 'gone'), reject(5, 'kept')] });
    const job = { tenantSeq: tenant.seq, userHash: hashUserId('gone') };
    expect(await storage.erasure.erase(job, 'gone')).toEqual({ deletedEvents: 2, deletedRejects: 1 });
    // What a node does that resumes the job after a crash between erasure and completion.
    expect(await storage.erasure.erase(job)).toEqual({ deletedEvents: 0, deletedRejects: 0 });
    expect(await storage.erasure.erase(job, 'gone')).toEqual({ deletedEvents: 0, deletedRejects: 0 });
    expect(await storage.events.countEvents({ tenantSeq: tenant.seq })).toBe(1);
    // By hash alone, the other user goes the same way.
    expect(await storage.erasure.erase({ tenantSeq: tenant.seq, userHash: hashUserId('kept') })).toEqual({ deletedEvents: 1, deletedRejects: 1 });
    await storage.close();
  });
});
sessionStoreContract('DuckDB', () => openEmbeddedStorage(freshDir()));
contentStoreContract('DuckDB', () => openEmbeddedStorage(freshDir()));

describe('DuckDB database file', () => {
  it('keeps committed events across a close and reopen, migrating only once', async () => {
    const dir = freshDir();
    const first = await openEmbeddedStorage(dir);
    const tenant = await first.meta.createTenant({
      id: 'x', name: 'X', retentionMonths: 12, createdAt: 0,
      settings: { theme: { primaryColor: '#000000' }, featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true }, localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR', allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1 },
    });
    await first.events.commit({
      events: [{ tenantSeq: tenant.seq, eventId: '0190a6a0-0000-7000-8000-000000000001', event: 'broadcast.joined', userId: null, sessionId: 'svc_s', broadcastId: 'b', campaignId: 1, timestampMs: 1, receivedAtMs: 2, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}' }],
      rejects: [],
    });
    await first.close();
    const second = await openEmbeddedStorage(dir);
    expect(await second.events.countEvents({ tenantSeq: tenant.seq })).toBe(1);
    expect((await second.meta.listTenants()).map((t) => t.id)).toEqual(['x']);
    await second.close();
  });

  it('still recognises an event stored before a restart, inside a batch of new ones', async () => {
    const dir = freshDir();
    const settings = { theme: { primaryColor: '#000000' }, featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true }, localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR', allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1 };
    const row = (tenantSeq: number, eventId: string) => ({ tenantSeq, eventId, event: 'broadcast.joined', userId: null, sessionId: 'svc_s', broadcastId: 'b', campaignId: 1, timestampMs: 1, receivedAtMs: 2, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}' });
    const first = await openEmbeddedStorage(dir);
    const tenant = await first.meta.createTenant({ id: 'x', name: 'X', retentionMonths: 12, createdAt: 0, settings });
    const old = '0190a6a0-0000-7000-8000-0000000000aa';
    await first.events.commit({ events: [row(tenant.seq, old)], rejects: [] });
    await first.close();
    const second = await openEmbeddedStorage(dir);
    const fresh = '0190a6a0-0000-7000-8000-0000000000bb';
    const outcome = await second.events.commit({
      events: [row(tenant.seq, old), row(tenant.seq, fresh)],
      rejects: [{ tenantSeq: tenant.seq, id: '0190a6a0-0000-7000-8000-0000000000cc', receivedAtMs: 3, code: 'unknown_event', detail: 'x', errors: '[]', eventName: null, userId: null, payload: '{}' }],
    });
    expect([...outcome.inserted]).toEqual([`${tenant.seq}:${fresh}`]);
    expect(await second.events.countEvents({ tenantSeq: tenant.seq })).toBe(2);
    expect(await second.events.listRejected(tenant.seq, { limit: 10 })).toHaveLength(1);
    await second.close();
  });

  it('falls back for an id stored before a restart: deliveries only for new events, nothing left staged', async () => {
    const dir = freshDir();
    const row = (eventId: string) => ({ tenantSeq: 1, eventId, event: 'broadcast.joined', userId: null, sessionId: 'svc_s', broadcastId: 'b', campaignId: 1, timestampMs: 1, receivedAtMs: 2, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}' });
    const delivery = (eventId: string, n: number) => ({ id: `0190a6a0-0000-7000-9000-00000000000${n}`, tenantSeq: 1, endpointId: 'ep', eventId, event: 'broadcast.joined', userId: null, payload: '{}', createdAt: 5 });
    const old = '0190a6a0-0000-7000-8000-0000000000aa';
    const fresh = '0190a6a0-0000-7000-8000-0000000000bb';
    const later = '0190a6a0-0000-7000-8000-0000000000cc';
    const first = await DuckDbDatabase.open(dir);
    await new DuckDbEventStore(first).commit({ events: [row(old)], rejects: [] });
    await first.close();

    const db = await DuckDbDatabase.open(dir);
    const events = new DuckDbEventStore(db);
    const staged = () =>
      db.write(async (c) => db.writeQuery(c, 'SELECT (SELECT count(*) FROM event_stage) + (SELECT count(*) FROM delivery_stage) AS n'));
    const pending = async () => (await db.query('SELECT event_id::VARCHAR AS id FROM webhook_deliveries ORDER BY id')).map((r) => r.id);

    const outcome = await events.commit({ events: [row(old), row(fresh)], rejects: [], deliveries: [delivery(old, 1), delivery(fresh, 2)] });
    expect([...outcome.inserted]).toEqual([`1:${fresh}`]);
    expect(await pending()).toEqual([fresh]);
    expect(Number((await staged())[0]?.n)).toBe(0);

    await events.commit({ events: [row(later)], rejects: [], deliveries: [delivery(later, 3)] });
    expect(await pending()).toEqual([fresh, later]);
    expect(Number((await staged())[0]?.n)).toBe(0);
    expect(await events.countEvents({ tenantSeq: 1 })).toBe(3);
    await db.close();
  });

  it("deletes only an endpoint's pending deliveries, keeping its log, the endpoint and other tenants' deliveries", async () => {
    const storage = await openEmbeddedStorage(freshDir());
    const row = (tenantSeq: number, n: number) => ({ tenantSeq, eventId: `0190a6a0-0000-7000-8000-00000000000${n}`, event: 'broadcast.joined', userId: null, sessionId: 'svc_s', broadcastId: 'b', campaignId: 1, timestampMs: 1, receivedAtMs: 2, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}' });
    const delivery = (tenantSeq: number, endpointId: string, n: number) => ({ id: `0190a6a0-0000-7000-9000-00000000000${n}`, tenantSeq, endpointId, eventId: row(tenantSeq, n).eventId, event: 'broadcast.joined', userId: null, payload: '{}', createdAt: 5 });
    const planned = [delivery(1, 'ep', 1), delivery(1, 'ep', 2), delivery(1, 'other', 3), delivery(2, 'ep', 4)];
    await storage.events.commit({ events: [row(1, 1), row(1, 2), row(1, 3), row(2, 4)], rejects: [], deliveries: planned });
    const [done] = planned;
    await storage.webhookDeliveries.recordAttempts([{ id: done!.id, outcome: { status: 'delivered', attempts: 1, nextAttemptAt: null, attemptedAt: 6, statusCode: 200, error: null, latencyMs: 1 } }]);
    const endpoint = { tenantSeq: 1, id: 'ep', url: 'https://r.example/', description: null, eventTypes: null, enabled: true, disabledReason: null, secret: 'whsec_x', previousSecret: null, previousSecretExpiresAt: null, failingSince: null, createdAt: 1, updatedAt: 1 };
    await storage.webhookEndpoints.createEndpoint(endpoint, 20);

    expect(await storage.webhookDeliveries.deletePending(1, 'ep')).toBe(1);
    expect([...(await storage.webhookDeliveries.pendingAmong(planned.map((d) => d.id)))].sort()).toEqual([planned[2]!.id, planned[3]!.id]);
    expect((await storage.webhookDeliveries.getDelivery(1, done!.id))?.status).toBe('delivered');
    expect(await storage.webhookEndpoints.getEndpoint(1, 'ep')).toEqual(endpoint);
    // Deleting the endpoint leaves its deliveries to deletePending (they may live in another database).
    expect(await storage.webhookEndpoints.deleteEndpoint(1, 'other')).toBe(false);
    expect(await storage.webhookDeliveries.pendingAmong([planned[2]!.id])).toEqual(new Set([planned[2]!.id]));
    await storage.close();
  });

  it('stores nothing of a failed commit, and the next commit does not carry its rows', async () => {
    const db = await DuckDbDatabase.open(freshDir());
    const events = new DuckDbEventStore(db);
    const row = (eventId: string) => ({ tenantSeq: 1, eventId, event: 'broadcast.joined', userId: null, sessionId: 'svc_s', broadcastId: 'b', campaignId: 1, timestampMs: 1, receivedAtMs: 2, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}' });
    const failed = '0190a6a0-0000-7000-8000-0000000000aa';
    // A delivery id that is not a UUID makes the transaction fail after the events went in.
    const broken = { id: 'not-a-uuid', tenantSeq: 1, endpointId: 'ep', eventId: failed, event: 'broadcast.joined', userId: null, payload: '{}', createdAt: 5 };
    await expect(events.commit({ events: [row(failed)], rejects: [], deliveries: [broken] })).rejects.toThrow();
    expect(await events.countEvents({ tenantSeq: 1 })).toBe(0);

    const next = '0190a6a0-0000-7000-8000-0000000000bb';
    const outcome = await events.commit({ events: [row(next)], rejects: [] });
    expect([...outcome.inserted]).toEqual([`1:${next}`]);
    expect((await events.queryEvents({ tenantSeq: 1 }, { limit: 10 })).map((e) => e.eventId)).toEqual([next]);
    await db.close();
  });

  it('checkpoints only once the WAL passes its threshold, not at DuckDB\'s 16 MB default', async () => {
    const db = await DuckDbDatabase.open(freshDir());
    const [row] = await db.query("SELECT current_setting('checkpoint_threshold') AS threshold");
    expect(row?.threshold).toBe(`${CHECKPOINT_THRESHOLD_MIB}.0 MiB`);
    expect(CHECKPOINT_THRESHOLD_MIB).toBeGreaterThanOrEqual(256);
    await db.close();
  });

  it('takes a memory limit for its cache and working memory', async () => {
    const db = await DuckDbDatabase.open(freshDir(), { memoryLimit: '256MB' });
    const [row] = await db.query("SELECT current_setting('memory_limit') AS setting");
    expect(row?.setting).toMatch(/^2\d\d\.\d MiB$/);
    const bytes = await db.memoryLimitBytes();
    expect(bytes).toBeGreaterThan(200 * 2 ** 20);
    expect(bytes).toBeLessThanOrEqual(256 * 1e6);
    await db.close();
  });

  it('reads back text that begins with a byte-order mark as it was stored', async () => {
    const db = await DuckDbDatabase.open(freshDir());
    const store = new DuckDbEventStore(db);
    const values = ['\ufeff', '\ufeffu1', 'u\ufeff', '\ufeff\ufeff'];
    const rows = await db.query('SELECT unnest($1::VARCHAR[]) AS v', [listValue(values)]);
    expect(rows.map((r) => r.v)).toEqual(values);
    await store.commit({
      events: values.map((userId, i) => ({
        tenantSeq: 1, eventId: `0190a6a0-0000-7000-8000-00000000000${i}`, event: 'poll.viewed', userId, sessionId: '\ufeffsvc_s', broadcastId: 'b',
        campaignId: 1, timestampMs: i, receivedAtMs: i, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}',
      })),
      rejects: [],
    });
    const stored = await store.queryEvents({ tenantSeq: 1 }, { limit: 10 });
    expect(stored.map((e) => e.userId)).toEqual(values);
    expect(stored.map((e) => e.sessionId)).toEqual(values.map(() => '\ufeffsvc_s'));
    expect(await store.queryEvents({ tenantSeq: 1, userId: '\ufeff' }, { limit: 10 })).toHaveLength(1);
    await db.close();
  });

  it('gives overlays and sponsors stored before schema 11 no show time and no logo', async () => {
    const dir = freshDir();
    const db = await DuckDbDatabase.open(dir);
    await db.write(async (c) => {
      await c.run('DELETE FROM schema_migrations WHERE version >= 11');
      await c.run('ALTER TABLE overlays DROP COLUMN shown_at');
      await c.run('ALTER TABLE sponsors DROP COLUMN logo_url');
      // Later schemas' tables go too: the file is as schema 10 left it.
      await c.run('DROP TABLE dashboard_sessions');
      await c.run('DROP TABLE contest_entries');
      // Rows as the previous version wrote them.
      await c.run(`INSERT INTO overlays VALUES (1, 'b1', 'line_1', 'lineup', '{"type":"lineup","items":[{"title":"Kick-off"}]}', true, epoch_ms(10::BIGINT), epoch_ms(20::BIGINT))`);
      await c.run(`INSERT INTO sponsors VALUES (1, 'acme', 'Acme', epoch_ms(5::BIGINT))`);
    });
    await db.close();
    const storage = await openEmbeddedStorage(dir);
    expect(await storage.content.getOverlay(1, 'line_1')).toMatchObject({ id: 'line_1', active: true, createdAt: 10, updatedAt: 20, shownAt: null });
    expect(await storage.content.getSponsor(1, 'acme')).toEqual({ tenantSeq: 1, id: 'acme', name: 'Acme', logoUrl: null, createdAt: 5 });
    await storage.close();
  });

  it('writes a copy of an overlay exactly as given, creating it or in place of the stored one, an earlier updatedAt included', async () => {
    const db = await DuckDbDatabase.open(freshDir());
    const copies = new DuckDbContentStore(db);
    const content = { type: 'poll' as const, question: 'Which?', options: ['x', 'y'] };
    const poll: OverlayRecord = { tenantSeq: 1, broadcastId: 'b1', id: 'p1', type: 'poll', content, active: false, createdAt: 10, updatedAt: 30, shownAt: null };
    await copies.putOverlay(poll);
    expect(await copies.getOverlay(1, 'p1')).toEqual(poll);
    const changed: OverlayRecord = { ...poll, content: { ...content, closesAt: '2030-01-01T00:00:00.000Z' }, active: true, updatedAt: 20, shownAt: 15 };
    await copies.putOverlay(changed);
    expect(await copies.listPolls()).toEqual([changed]);
    await db.close();
  });

  it('refuses a closed database with a catalogue error', async () => {
    const db = await DuckDbDatabase.open(freshDir());
    await db.close();
    expect(() => db.query('SELECT 1')).toThrow(expect.objectContaining({ code: 'not_ready' }));
  });
});
