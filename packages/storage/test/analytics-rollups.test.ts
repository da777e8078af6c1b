import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openEmbeddedStorage, type AnalyticsFilter, type Storage } from '../src';
import { createPolls, dataset, filters, HOUR, pollsOf, SETTINGS, START } from './analytics-dataset';
import type { EventRow } from '../src/records';
import { modelContestEntries, modelCountries, modelEngagement, modelFunnel, modelPollResults, modelRevenue, modelRevenueMinutes, modelSponsorPerformance, modelViewerSeries } from './analytics-model';

async function expectModel(storage: Storage, events: EventRow[], filter: AnalyticsFilter): Promise<void> {
  const label = JSON.stringify(filter);
  const a = storage.analytics;
  expect(await a.viewerSeries(filter), label).toEqual(modelViewerSeries(events, filter));
  expect(await a.engagement(filter), label).toEqual(modelEngagement(events, filter));
  expect(await a.pollResults(filter), label).toEqual(modelPollResults(events, filter, pollsOf()));
  expect(await a.sponsorPerformance(filter), label).toEqual(modelSponsorPerformance(events, filter));
  expect(await a.revenue(filter), label).toEqual(modelRevenue(events, filter));
  expect(await a.funnel(filter), label).toEqual(modelFunnel(events, filter));
  expect(await a.contestEntries(filter), label).toEqual(modelContestEntries(events, filter));
  expect(await a.revenueMinutes(filter), label).toEqual(modelRevenueMinutes(events, filter));
  expect(await a.countries(filter), label).toEqual(modelCountries(events, filter));
}

describe('dashboard rollups', () => {
  it.each([1, 2, 3])('answer every panel as the raw events do, through restarts, compaction, deletion and retention (seed %i)', async (seed) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-rollups-'));
    let storage = await openEmbeddedStorage(dir);
    const tenant = await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    const other = await storage.meta.createTenant({ id: 'o', name: 'O', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    await createPolls(storage, tenant.seq);
    await createPolls(storage, other.seq);
    let events = dataset(seed, tenant.seq);
    // Another tenant's events, at the same times and with the same names, must change nothing.
    await storage.events.commit({ events: dataset(seed, other.seq), rejects: [] });
    // Half now in small commits; the rest after a restart, mixed with repeats of the first half
    // (which takes the slower path that skips stored ids).
    const half = Math.floor(events.length / 2);
    for (let i = 0; i < half; i += 23) await storage.events.commit({ events: events.slice(i, Math.min(i + 23, half)), rejects: [] });
    await storage.close();
    storage = await openEmbeddedStorage(dir);
    for (let i = half; i < events.length; i += 31) {
      await storage.events.commit({ events: [...events.slice(i, i + 31), ...events.slice(i - half, i - half + 5)], rejects: [] });
    }
    for (const filter of filters(seed, tenant.seq)) await expectModel(storage, events, filter);

    await storage.analytics.compact();
    for (const filter of filters(seed, tenant.seq).slice(0, 8)) await expectModel(storage, events, filter);

    // One viewer erased; then retention cuts in the middle of an hour.
    const erased = 'u3';
    await storage.deletions.create({ id: 'job', tenantSeq: tenant.seq, userHash: createHash('sha256').update(erased).digest('hex'), status: 'pending', requestedAt: 0, completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null });
    await storage.erasure.erase((await storage.deletions.get(tenant.seq, 'job'))!);
    const cutoff = START + 2 * HOUR + 1_234_567;
    await storage.events.purgeEventsBefore(tenant.seq, cutoff);
    events = events.filter((e) => e.userId !== erased && e.timestampMs >= cutoff);
    for (const filter of filters(seed, tenant.seq).slice(0, 8)) await expectModel(storage, events, filter);
    await storage.close();
  });

  it('marks the rows alone in their key as hours are compacted one after another, and answers the same between compactions', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-rollups-'));
    const storage = await openEmbeddedStorage(dir);
    const tenant = await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    await createPolls(storage, tenant.seq);
    // As a live service sees them: in time order, compacted every 40 minutes of event time, so
    // sessions that cross an hour get their first hour compacted (and marked alone) before the
    // rest of them arrives.
    const events = dataset(4, tenant.seq).sort((a, b) => a.timestampMs - b.timestampMs);
    const { DuckDbDatabase } = await import('../src');
    const stored: EventRow[] = [];
    let next = 0;
    for (let until = START + 40 * 60_000; next < events.length; until += 40 * 60_000) {
      const chunk: EventRow[] = [];
      while (next < events.length && events[next]!.timestampMs < until) chunk.push(events[next++]!);
      for (let i = 0; i < chunk.length; i += 17) await storage.events.commit({ events: chunk.slice(i, i + 17), rejects: [] });
      stored.push(...chunk);
      // Before the compaction, keys marked alone may have new rows not compacted yet.
      for (const filter of filters(4, tenant.seq).slice(0, 6)) await expectModel(storage, stored, filter);
      await storage.analytics.compact();
      for (const filter of filters(4, tenant.seq).slice(0, 6)) await expectModel(storage, stored, filter);
    }
    await storage.close();
    // Every row marked alone is alone in its key, and most rows are (most sessions fit in an hour).
    const db = await DuckDbDatabase.open(dir);
    for (const [table, key] of [['session_hours', 'session_key'], ['vote_hours', 'vote_key'], ['sponsor_hours', 'exposure_key'], ['view_hours', 'session_key']]) {
      const [row] = await db.query(
        `SELECT count(*) FILTER (WHERE only_row) AS alone, count(*) AS total,
                count(*) FILTER (WHERE only_row AND n > 1) AS wrong, count(*) FILTER (WHERE NOT only_row AND n = 1) AS missed
         FROM (SELECT only_row, count(*) OVER (PARTITION BY tenant_seq, ${key}) AS n FROM ${table})`,
      );
      expect(Number(row!.wrong), table).toBe(0);
      expect(Number(row!.missed), table).toBe(0);
      expect(Number(row!.alone), table).toBeGreaterThan(Number(row!.total) / 4);
    }
    await db.close();
    // About 100 comparisons with the model over a day of events: 20–55 s on a busy 2-core machine.
  }, 120_000);

  it("counts a userId's first vote when another session's vote of that userId comes after one already compacted, earlier or later", async () => {
    const storage = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-rollups-')));
    const tenant = await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    await createPolls(storage, tenant.seq);
    const poll = pollsOf()[0]!;
    const vote = (n: number, userId: string, sessionId: string, timestampMs: number, optionIndex: number): EventRow => ({
      tenantSeq: tenant.seq, eventId: `0190a6a0-0000-7000-8000-${String(n).padStart(12, '0')}`, event: 'poll.voted', userId, sessionId,
      broadcastId: poll.broadcastId, campaignId: 1, timestampMs, receivedAtMs: timestampMs, country: null, orderId: null, sponsorId: null,
      total: null, items: null, data: JSON.stringify({ pollId: poll.id, optionSelected: `Option ${optionIndex}`, optionIndex }),
    });
    const votesFor = async (events: EventRow[], filter: AnalyticsFilter) => {
      const results = await storage.analytics.pollResults(filter);
      expect(results).toEqual(modelPollResults(events, filter, pollsOf()));
      return results.find((r) => r.pollId === poll.id)?.options.map((o) => o.votes);
    };
    const whole = { tenantSeq: tenant.seq };
    const laterHour = { tenantSeq: tenant.seq, fromMs: START + 2 * HOUR, toMs: START + 3 * HOUR };
    // Two userIds vote once each; their rows are compacted.
    const first = [vote(1, 'u1', 's1', START + 2 * HOUR + 600_000, 1), vote(2, 'u2', 's3', START + 2 * HOUR + 900_000, 0)];
    await storage.events.commit({ events: first, rejects: [] });
    await storage.analytics.compact();
    expect(await votesFor(first, whole)).toEqual([1, 1, 0]);
    // Then each votes again from another session: u1 an hour earlier (it arrives late, from an
    // offline queue), u2 later. u1's first vote is the late one now; u2's is still the first one.
    const all = [...first, vote(3, 'u1', 's2', START + HOUR + 300_000, 2), vote(4, 'u2', 's4', START + 2 * HOUR + 1_800_000, 2)];
    await storage.events.commit({ events: all.slice(2), rejects: [] });
    for (let compacted = 0; compacted < 2; compacted++) {
      expect(await votesFor(all, whole), `compacted ${compacted}`).toEqual([1, 0, 1]);
      // Within the later hour alone, u1's first vote there is its first again.
      expect(await votesFor(all, laterHour), `compacted ${compacted}`).toEqual([1, 1, 0]);
      await storage.analytics.compact();
    }
    await storage.close();
  });

  it('merges the rows commits append, one per session and hour, and answers the same before and after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-rollups-'));
    const storage = await openEmbeddedStorage(dir);
    const tenant = await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    await createPolls(storage, tenant.seq);
    const events = dataset(9, tenant.seq).slice(0, 150);
    for (const event of events) {
      await storage.events.commit({ events: [event], rejects: [] });
      // A read waits for the commit's rollups, so each commit gets a derivation of its own.
      await storage.analytics.revenue({ tenantSeq: tenant.seq });
    }
    await storage.close();
    const { DuckDbDatabase } = await import('../src');
    const count = async () => {
      const db = await DuckDbDatabase.open(dir);
      const rows = await db.query('SELECT count(*) AS n, count(DISTINCT (session_key, viewer_key, broadcast_id, user_id, country, hour)) AS keys FROM session_hours');
      await db.close();
      return { rows: Number(rows[0]!.n), keys: Number(rows[0]!.keys) };
    };
    const before = await count();
    expect(before.rows).toBe(events.length); // one partial row per commit here
    const reopened = await openEmbeddedStorage(dir);
    // One event per commit: each commit wrote only the rollups its event feeds.
    await expectModel(reopened, events, { tenantSeq: tenant.seq });
    await reopened.analytics.compact();
    await expectModel(reopened, events, { tenantSeq: tenant.seq });
    await reopened.close();
    const after = await count();
    expect(after.rows).toBe(before.keys);
    expect(after.rows).toBeLessThan(before.rows);
  });

  it('derives at the next start the batches a process committed without their rollups, and erases a user whose events are not derived yet', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-rollups-'));
    const { DuckDbDatabase, DuckDbDeletionStore, DuckDbEventStore } = await import('../src');
    const setup = await openEmbeddedStorage(dir);
    const tenant = await setup.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    await createPolls(setup, tenant.seq);
    await setup.close();
    const events = dataset(5, tenant.seq);
    const half = Math.floor(events.length / 2);
    const pendingRows = async (db: { query(sql: string): Promise<Array<Record<string, unknown>>> }) => Number((await db.query('SELECT count(*) AS n FROM events WHERE batch > (SELECT applied FROM rollup_watermark)'))[0]!.n);

    // A process that commits and stops before deriving anything, like one killed right after its commits.
    let db = await DuckDbDatabase.open(dir);
    db.rollups.stop();
    for (let i = 0; i < half; i += 40) await new DuckDbEventStore(db).commit({ events: events.slice(i, Math.min(i + 40, half)), rejects: [] });
    expect(await pendingRows(db)).toBe(half);
    expect(Number((await db.query('SELECT count(*) AS n FROM session_hours'))[0]!.n)).toBe(0);
    await db.close();
    let storage = await openEmbeddedStorage(dir);
    for (const filter of filters(5, tenant.seq).slice(0, 6)) await expectModel(storage, events.slice(0, half), filter);
    await storage.close();

    // The rest is not derived yet when a deletion runs: the deletion derives it first, then erases.
    db = await DuckDbDatabase.open(dir);
    expect(await pendingRows(db)).toBe(0);
    db.rollups.stop();
    await new DuckDbEventStore(db).commit({ events: events.slice(half), rejects: [] });
    const erased = 'u3';
    expect(events.slice(half).some((e) => e.userId === erased)).toBe(true);
    const deletions = new DuckDbDeletionStore(db);
    await deletions.create({ id: 'job', tenantSeq: tenant.seq, userHash: createHash('sha256').update(erased).digest('hex'), status: 'pending', requestedAt: 0, completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null });
    await deletions.erase((await deletions.get(tenant.seq, 'job'))!, erased);
    expect(await pendingRows(db)).toBe(0);
    for (const table of ['session_hours', 'vote_hours', 'sponsor_hours', 'view_hours', 'funnel_steps', 'order_reports']) {
      expect(Number((await db.query(`SELECT count(*) AS n FROM ${table} WHERE user_id = '${erased}'`))[0]!.n), table).toBe(0);
    }
    await db.close();
    storage = await openEmbeddedStorage(dir);
    const kept = events.filter((e) => e.userId !== erased);
    for (const filter of filters(5, tenant.seq).slice(0, 6)) await expectModel(storage, kept, filter);
    await storage.close();
  });
});
