import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DuckDbDatabase, openEmbeddedStorage } from '../src';
import type { EventRow } from '../src/records';
import { SETTINGS } from './analytics-dataset';

const T0 = Date.UTC(2026, 10, 20, 18);

describe('migration to the contest entries rollup', () => {
  it('fills it from the entries stored before, and the panel answers as it did from the events', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-contests-'));
    let storage = await openEmbeddedStorage(dir);
    const tenant = await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    const entry = (n: number, contestId: string, userId: string | null, sessionId: string): EventRow => ({
      tenantSeq: tenant.seq, eventId: `0190a6a0-0000-7000-8000-${String(n).padStart(12, '0')}`, event: 'contest.entered', userId,
      sessionId, broadcastId: 'b1', campaignId: 1, timestampMs: T0 + 1000 * n, receivedAtMs: T0 + 1000 * n, country: null,
      orderId: null, sponsorId: null, total: null, items: null, data: JSON.stringify({ contestId }),
    });
    // u1 enters twice from two sessions; an anonymous session once; one entry names no contest.
    await storage.events.commit({ events: [entry(1, 'c1', 'u1', 's1'), entry(2, 'c1', 'u1', 's2'), entry(3, 'c1', null, 's3'), entry(4, 'c2', null, 's3'), entry(5, '', null, 's4')], rejects: [] });
    const expected = [{ contestId: 'c1', entries: 3, entrants: 2 }, { contestId: 'c2', entries: 1, entrants: 1 }];
    expect(await storage.analytics.contestEntries({ tenantSeq: tenant.seq })).toEqual(expected);
    await storage.close();

    // The database as the previous version left it (schema 12): no contest_entries.
    const db = await DuckDbDatabase.open(dir);
    await db.write(async (c) => {
      await c.run('DELETE FROM schema_migrations WHERE version >= 13');
      await c.run('DROP TABLE contest_entries');
    });
    await db.close();

    storage = await openEmbeddedStorage(dir);
    expect(await storage.analytics.contestEntries({ tenantSeq: tenant.seq })).toEqual(expected);
    // And entries stored after it, in the range or cut by it.
    await storage.events.commit({ events: [entry(6, 'c2', 'u1', 's5')], rejects: [] });
    expect(await storage.analytics.contestEntries({ tenantSeq: tenant.seq })).toEqual([{ contestId: 'c1', entries: 3, entrants: 2 }, { contestId: 'c2', entries: 2, entrants: 2 }]);
    expect(await storage.analytics.contestEntries({ tenantSeq: tenant.seq, fromMs: T0 + 2500, toMs: T0 + 4500 })).toEqual([{ contestId: 'c1', entries: 1, entrants: 1 }, { contestId: 'c2', entries: 1, entrants: 1 }]);
    await storage.close();
  });
});
