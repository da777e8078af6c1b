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
    await content.setActive(tenant, 'live', lineup.id, false);
    const where = { tenantSeq: tenant.seq, broadcastId: 'live' };
    expect(seen).toEqual([
      ['broadcast.registered', where],
      ['broadcast.registered', where],
      ['content.changed', { ...where, change: { kind: 'show', overlay: shown } }],
      ['content.changed', { ...where, change: { kind: 'update', overlay: updated } }],
      ['content.changed', { ...where, change: { kind: 'hide', overlayId: lineup.id, hiddenAt: new Date(NOW).toISOString() } }],
    ]);
    expect(JSON.parse(JSON.stringify(seen))).toEqual(seen);
  });
});
