import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DuckDbAnalyticsStore, DuckDbContentStore, DuckDbDatabase, DuckDbEventStore, UNDECODABLE_EVENTS_TABLE, type EventRow, type UndecodableEvent } from '../src';

const row = (tenantSeq: number, eventId: string, data: string): EventRow => ({
  tenantSeq, eventId, event: 'poll.voted', userId: 'u1', sessionId: 'svc_s', broadcastId: 'b', campaignId: 1,
  timestampMs: Date.UTC(2026, 10, 20, 10), receivedAtMs: Date.UTC(2026, 10, 20, 10), country: null, orderId: null, sponsorId: null, total: null, items: null, data,
});
const VOTE = '{"pollId":"p1","questionText":"Who?","optionSelected":"A","optionIndex":0}';
// What JSON.stringify writes for a lone surrogate, as older versions stored it.
const POISONED = JSON.stringify({ pollId: 'p1', questionText: '\ud800', optionSelected: 'A', optionIndex: 0 });

describe('undecodable events', () => {
  it('sets an event DuckDB cannot read aside when the background rollups meet it, reports it once, and derives the rest', async () => {
    expect(POISONED).toContain('\\ud800');
    const db = await DuckDbDatabase.open(mkdtempSync(join(tmpdir(), 'svc-store-')));
    const events = new DuckDbEventStore(db);
    const reported: UndecodableEvent[] = [];
    db.onUndecodableEvents((lot) => reported.push(...lot));
    const bad = '0190a6a0-0000-7000-8000-0000000000b1';
    await events.commit({ events: [row(1, '0190a6a0-0000-7000-8000-0000000000a1', VOTE), row(1, bad, POISONED)], rejects: [] });
    await events.commit({ events: [row(2, '0190a6a0-0000-7000-8000-0000000000a2', VOTE)], rejects: [] });
    await db.rollups.settled();

    expect(reported).toEqual([{ tenantSeq: 1, eventId: bad }]);
    expect(db.undecodableEventCount()).toBe(1);
    const [watermark] = await db.query('SELECT applied, (SELECT max(batch) FROM events) AS last FROM rollup_watermark');
    expect(Number(watermark!.applied)).toBe(Number(watermark!.last));
    // Votes about a poll the service does not know never reach vote_hours; every event reaches session_hours.
    const votes = await db.query('SELECT tenant_seq, count(*) AS n FROM session_hours GROUP BY ALL ORDER BY tenant_seq');
    expect(votes.map((v) => [Number(v.tenant_seq), Number(v.n)])).toEqual([[1, 1], [2, 1]]);
    const [aside] = await db.query(`SELECT event_id::VARCHAR AS id, row_text FROM ${UNDECODABLE_EVENTS_TABLE}`);
    expect(aside!.id).toBe(bad);
    expect(JSON.parse(String(aside!.row_text))).toMatchObject({ data: POISONED });
    expect(await events.countEvents({ tenantSeq: 1 })).toBe(1);
    await db.close();
  });

  it('answers a dashboard panel over a part-hour and loads a room when an unreadable event sits among derived ones', async () => {
    const db = await DuckDbDatabase.open(mkdtempSync(join(tmpdir(), 'svc-store-')));
    const events = new DuckDbEventStore(db);
    await events.commit({ events: [row(1, '0190a6a0-0000-7000-8000-0000000000a1', VOTE)], rejects: [] });
    await db.rollups.settled();
    // As an older version left it: in a batch the rollups count as derived.
    const bad = '0190a6a0-0000-7000-8000-0000000000b2';
    await db.write((c) => c.run(
      `INSERT INTO events (tenant_seq, event_id, event, user_id, session_id, broadcast_id, campaign_id, ts, received_at, data, batch)
       VALUES (1, '${bad}', 'poll.voted', 'u2', 'svc_t', 'b', 1, epoch_ms(${Date.UTC(2026, 10, 20, 10, 30)}::BIGINT), now(), $1, 0)`,
      [POISONED],
    ));
    const analytics = new DuckDbAnalyticsStore(db);
    const results = await analytics.pollResults({ tenantSeq: 1, fromMs: Date.UTC(2026, 10, 20, 10, 15), toMs: Date.UTC(2026, 10, 20, 10, 45) });
    expect(results).toEqual([]);
    expect(db.undecodableEventCount()).toBe(1);
    expect(await new DuckDbContentStore(db).listInteractions(1, 'b')).toHaveLength(1);
    await db.close();
  });

  it('purges events set aside with the quarantine, after its 30 days', async () => {
    const db = await DuckDbDatabase.open(mkdtempSync(join(tmpdir(), 'svc-store-')));
    const events = new DuckDbEventStore(db);
    await events.commit({ events: [row(1, '0190a6a0-0000-7000-8000-0000000000c1', POISONED), row(1, '0190a6a0-0000-7000-8000-0000000000c2', POISONED)], rejects: [] });
    await db.rollups.settled();
    expect(db.undecodableEventCount()).toBe(2);
    const setAsideAt = async () => (await db.query(`SELECT epoch_ms(set_aside_at) AS at FROM ${UNDECODABLE_EVENTS_TABLE}`)).map((r) => Number(r.at));
    const [first] = await setAsideAt();
    // Before the cutoff they stay; set aside before it, they go with the quarantine.
    expect(await events.purgeRejectedBefore(first! - 1)).toBe(0);
    expect(await setAsideAt()).toHaveLength(2);
    expect(await events.purgeRejectedBefore(Date.now() + 60_000)).toBe(2);
    expect(await setAsideAt()).toEqual([]);
    await db.close();
  });
});
