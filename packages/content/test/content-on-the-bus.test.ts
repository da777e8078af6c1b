import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalBus, ManualClock, type BusTopic } from '@svc/protocol';
import { openEmbeddedStorage, type Storage } from '@svc/storage';
import { TEST_SETTINGS } from '../../storage/test/test-settings';
import { ContentService } from '../src/content-service';

const NOW = Date.UTC(2026, 10, 1, 12);

describe('content on the bus', () => {
  let storage: Storage | null = null;
  afterEach(async () => {
    await storage?.close();
    storage = null;
  });

  it('announces broadcasts moved between campaigns, and overlays shown, updated and hidden, each with its tenant and broadcast', async () => {
    storage = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-content-')));
    const tenant = await storage.meta.createTenant({ id: 'shows', name: 'Shows', retentionMonths: 12, createdAt: 0, settings: TEST_SETTINGS });
    const bus = new LocalBus();
    const seen: Array<[BusTopic, unknown]> = [];
    for (const topic of ['broadcast.registered', 'content.changed'] as const) bus.subscribe(topic, (payload) => void seen.push([topic, payload]));
    const content = new ContentService(storage.content, storage.interactions, bus, new ManualClock(NOW));
    await content.createCampaign(tenant, { id: 2, name: 'Final' });
    await content.createBroadcast(tenant, { id: 'live', campaignId: 1 });
    await content.updateBroadcast(tenant, 'live', { campaignId: 2 });
    const lineup = await content.createOverlay(tenant, 'live', { type: 'lineup', items: [{ title: 'Kick-off' }] });
    const shown = await content.setActive(tenant, 'live', lineup.id, true);
    const updated = await content.updateOverlay(tenant, 'live', lineup.id, { type: 'lineup', items: [{ title: 'Half time' }] });
    const hidden = await content.setActive(tenant, 'live', lineup.id, false);
    await content.deleteOverlay(tenant, 'live', lineup.id);
    const where = { tenantSeq: tenant.seq, broadcastId: 'live' };
    // All at one time of the clock, each change later than the one before (rooms order them by it).
    expect([shown, updated, hidden].map((o) => o.updatedAt)).toEqual([1, 2, 3].map((ms) => new Date(NOW + ms).toISOString()));
    expect(seen).toEqual([
      ['broadcast.registered', where],
      ['broadcast.registered', where],
      ['content.changed', { ...where, change: { kind: 'show', overlay: shown } }],
      ['content.changed', { ...where, change: { kind: 'update', overlay: updated } }],
      ['content.changed', { ...where, change: { kind: 'hide', overlayId: lineup.id, hiddenAt: new Date(NOW).toISOString(), updatedAt: hidden.updatedAt } }],
      // Deleted while hidden, it is told all the same: a show stored through another node just before may reach rooms later.
      ['content.changed', { ...where, change: { kind: 'hide', overlayId: lineup.id, hiddenAt: new Date(NOW).toISOString(), deleted: true } }],
    ]);
    expect(JSON.parse(JSON.stringify(seen))).toEqual(seen);
  });

  it('tells viewers of a show and the hide that follows it in that order, though the show still looks up its sponsor when the hide is stored', async () => {
    storage = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-content-')));
    const tenant = await storage.meta.createTenant({ id: 'moments', name: 'Moments', retentionMonths: 12, createdAt: 0, settings: TEST_SETTINGS });
    const bus = new LocalBus();
    const kinds: string[] = [];
    bus.subscribe('content.changed', (payload) => void kinds.push(payload.change.kind));
    // The sponsor lookup of the show's view, held until the hide had its chance to go out.
    const store = storage.content;
    let holdLookup: Promise<void> | null = null;
    let lookupHeld = () => undefined as void;
    const lookupReached = new Promise<void>((resolve) => (lookupHeld = resolve));
    let overlayReads = 0;
    const slowLookups = Object.assign(Object.create(store) as typeof store, {
      getOverlay: (tenantSeq: number, id: string) => {
        overlayReads++;
        return store.getOverlay(tenantSeq, id);
      },
      getSponsor: async (tenantSeq: number, id: string) => {
        if (holdLookup) {
          lookupHeld();
          await holdLookup;
        }
        return store.getSponsor(tenantSeq, id);
      },
    });
    const content = new ContentService(slowLookups, storage.interactions, bus, new ManualClock(NOW));
    await content.createBroadcast(tenant, { id: 'live', campaignId: 1 });
    await content.createSponsor(tenant, { id: 'acme', name: 'Acme' });
    const moment = await content.createOverlay(tenant, 'live', { type: 'sponsor_moment', sponsorId: 'acme', message: 'Brought to you by Acme' });
    let release = () => undefined as void;
    holdLookup = new Promise<void>((resolve) => (release = resolve));
    const show = content.setActive(tenant, 'live', moment.id, true);
    await lookupReached;
    holdLookup = null;
    const readsBeforeHide = overlayReads;
    const hide = content.setActive(tenant, 'live', moment.id, false);
    // While the show waits for its sponsor, the hide waits its turn: it has not even read the
    // overlay (without turns it would have read it, stored the hide and told viewers by now).
    await Promise.race([hide, new Promise((resolve) => setTimeout(resolve, 300))]);
    expect(overlayReads).toBe(readsBeforeHide);
    expect(kinds).toEqual([]);
    release();
    expect((await show).active).toBe(true);
    expect((await hide).active).toBe(false);
    expect(kinds).toEqual(['show', 'hide']);
    expect((await storage.content.getOverlay(tenant.seq, moment.id))?.active).toBe(false);
  });
});

