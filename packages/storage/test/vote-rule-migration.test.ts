import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DuckDbDatabase, openEmbeddedStorage } from '../src';
import type { EventRow } from '../src/records';

const SETTINGS = {
  theme: { primaryColor: '#000000' },
  featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true },
  localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR',
  allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1,
};
const T0 = Date.UTC(2026, 10, 20, 18);

describe('migration to the vote rule', () => {
  it('derives the votes an earlier version counted again: forged ones stored then count no more', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-votes-'));
    let storage = await openEmbeddedStorage(dir);
    const tenant = await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    await storage.content.createOverlay({
      tenantSeq: tenant.seq, broadcastId: 'b1', id: 'poll_1', type: 'poll', content: { type: 'poll', question: 'Who wins?', options: ['A', 'B', 'C'] },
      active: true, createdAt: T0, updatedAt: T0, shownAt: T0,
    });
    const vote = (n: number, optionIndex: number, optionSelected: string): EventRow => ({
      tenantSeq: tenant.seq, eventId: `0190a6a0-0000-7000-8000-${String(n).padStart(12, '0')}`, event: 'poll.voted', userId: null,
      sessionId: `svc_v${n}`, broadcastId: 'b1', campaignId: 1, timestampMs: T0 + 1000 + n, receivedAtMs: T0 + 1000 + n, country: null,
      orderId: null, sponsorId: null, total: null, items: null, data: JSON.stringify({ pollId: 'poll_1', questionText: 'Who wins?', optionSelected, optionIndex }),
    });
    await storage.events.commit({ events: [vote(1, 1, 'B'), ...Array.from({ length: 20 }, (_, i) => vote(100 + i, 99, 'Attacker'))], rejects: [] });
    expect((await storage.analytics.pollResults({ tenantSeq: tenant.seq }))[0]?.totalVotes).toBe(1);
    await storage.close();

    // The database as the previous version left it (schema 8): every vote in vote_hours, keyed by
    // viewer, no first_event_id; deletion jobs without purged_at.
    const db = await DuckDbDatabase.open(dir);
    await db.write(async (c) => {
      await c.run('DELETE FROM schema_migrations WHERE version >= 9');
      await c.run('ALTER TABLE deletion_jobs DROP COLUMN purged_at');
      await c.run('ALTER TABLE overlays DROP COLUMN shown_at');
      await c.run('ALTER TABLE sponsors DROP COLUMN logo_url');
      await c.run('DROP TABLE dashboard_sessions');
      await c.run('DROP TABLE contest_entries');
      await c.run('ALTER TABLE vote_hours DROP COLUMN first_event_id');
      await c.run(`DELETE FROM vote_hours`);
      await c.run(`INSERT INTO vote_hours BY NAME
        SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, hash(session_id) AS viewer_key,
               hash(json_extract_string(data, '$.pollId'), session_id) AS vote_key, json_extract_string(data, '$.pollId') AS poll_id,
               date_trunc('hour', ts) AS hour, ts AS first_ts, TRY_CAST(json_extract(data, '$.optionIndex') AS INTEGER) AS option_index,
               json_extract_string(data, '$.optionSelected') AS option, 'Who wins?' AS question, 1 AS votes, true AS compacted, true AS only_row
        FROM events WHERE event = 'poll.voted'`);
    });
    expect(Number((await db.query('SELECT count(*) AS n FROM vote_hours'))[0]!.n)).toBe(21);
    await db.close();

    storage = await openEmbeddedStorage(dir);
    const [poll] = await storage.analytics.pollResults({ tenantSeq: tenant.seq });
    expect(poll).toEqual({
      pollId: 'poll_1', broadcastId: 'b1', createdAt: expect.any(Number), question: 'Who wins?', totalVotes: 1,
      options: [{ optionIndex: 0, option: 'A', votes: 0 }, { optionIndex: 1, option: 'B', votes: 1 }, { optionIndex: 2, option: 'C', votes: 0 }],
    });
    await storage.close();
  });
});
