import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollDefinition } from '@svc/protocol';
import { openEmbeddedStorage, type AnalyticsFilter, type AnalyticsStore } from '../src';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { ClickHouseAnalyticsStore } from '../src/clickhouse/ch-analytics-store';
import type { PollLookup } from '../src/clickhouse/ch-poll-results';
import type { EventRow } from '../src/records';
import { createPolls, dataset, filters, HOUR, pollsOf, SETTINGS, START } from './analytics-dataset';
import { modelEngagement, modelFunnel, modelPollResults, modelRevenue, modelSponsorPerformance, modelViewerSeries } from './analytics-model';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';
import { insertEvents } from './clickhouse-events';

const BUCKET_MS = 15 * 60_000;

/** The polls of each tenant, as the content service's catalogue would find them. */
function pollLookup(byTenant: Record<number, PollDefinition[]>): PollLookup {
  return { find: (tenantSeq, pollId) => byTenant[tenantSeq]?.find((poll) => poll.id === pollId) };
}

async function expectModel(store: AnalyticsStore, events: EventRow[], filter: AnalyticsFilter, polls: PollDefinition[] = pollsOf()): Promise<void> {
  const label = JSON.stringify(filter);
  expect(await store.viewerSeries(filter, BUCKET_MS), label).toEqual(modelViewerSeries(events, filter, BUCKET_MS));
  expect(await store.engagement(filter), label).toEqual(modelEngagement(events, filter));
  expect(await store.pollResults(filter), label).toEqual(modelPollResults(events, filter, polls));
  expect(await store.sponsorPerformance(filter), label).toEqual(modelSponsorPerformance(events, filter));
  expect(await store.revenue(filter), label).toEqual(modelRevenue(events, filter));
  expect(await store.funnel(filter), label).toEqual(modelFunnel(events, filter));
}

/**
 * Stores the events in several inserts (several parts), then a fifth of them again, as a
 * retried batch would, with merges stopped so that the copies stay unmerged during the test.
 */
async function storeWithCopies(db: ChDatabase, events: EventRow[]): Promise<void> {
  await db.command('SYSTEM STOP MERGES events');
  for (let i = 0; i < events.length; i += 50) await insertEvents(db, events.slice(i, i + 50));
  await insertEvents(db, events.filter((_, i) => i % 5 === 0));
}

const available = clickhouseAvailable();

describe.skipIf(!available)('dashboard on ClickHouse', () => {
  let server: ClickHouseServer;
  beforeAll(async () => {
    server = await startClickHouse();
  }, 60_000);
  afterAll(() => server?.stop());

  const openDatabase = async () => ChDatabase.open(server.url, await server.createDatabase());

  it.each([1, 2, 3])('answers every panel as the raw events do, with copies of retried events not merged yet (seed %i)', async (seed) => {
    const db = await openDatabase();
    const [tenant, other] = [1, 2];
    const events = dataset(seed, tenant);
    // Another tenant's events, at the same times and with the same ids and names, change nothing.
    await insertEvents(db, dataset(seed, other));
    await storeWithCopies(db, events);
    const [stored] = await db.query<{ rows: string; ids: string }>(`SELECT count() AS rows, uniqExact(event_id) AS ids FROM events WHERE tenant_seq = ${tenant}`);
    expect(Number(stored!.ids)).toBe(events.length);
    expect(Number(stored!.rows)).toBeGreaterThan(events.length);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ [tenant]: pollsOf(), [other]: pollsOf() }));
    for (const filter of filters(seed, tenant)) await expectModel(store, events, filter);
    await db.close();
  });

  it('gives the numbers of the embedded store for the same events, every panel and filter', async () => {
    const storage = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-ch-analytics-')));
    const db = await openDatabase();
    try {
      const tenant = await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
      await createPolls(storage, tenant.seq);
      const events = dataset(7, tenant.seq);
      await storage.events.commit({ events, rejects: [] });
      await storeWithCopies(db, events);
      const duck = storage.analytics;
      const ch = new ClickHouseAnalyticsStore(db, pollLookup({ [tenant.seq]: pollsOf() }));
      for (const filter of filters(7, tenant.seq)) {
        const label = JSON.stringify(filter);
        expect(await ch.viewerSeries(filter, HOUR), label).toEqual(await duck.viewerSeries(filter, HOUR));
        expect(await ch.engagement(filter), label).toEqual(await duck.engagement(filter));
        expect(await ch.pollResults(filter), label).toEqual(await duck.pollResults(filter));
        expect(await ch.sponsorPerformance(filter), label).toEqual(await duck.sponsorPerformance(filter));
        expect(await ch.revenue(filter), label).toEqual(await duck.revenue(filter));
        expect(await ch.funnel(filter), label).toEqual(await duck.funnel(filter));
      }
    } finally {
      await Promise.all([storage.close(), db.close()]);
    }
  });

  it('counts votes only on polls the lookup knows, received before a poll closes', async () => {
    const db = await openDatabase();
    const events = dataset(8, 1);
    await storeWithCopies(db, events);
    // b1-p0 closes four hours in; b2-p1 was deleted (the lookup no longer knows it).
    const polls = pollsOf()
      .filter((poll) => poll.id !== 'b2-p1')
      .map((poll) => (poll.id === 'b1-p0' ? { ...poll, closesAtMs: START + 4 * HOUR } : poll));
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: polls }));
    const all = await store.pollResults({ tenantSeq: 1 });
    expect(all.map((poll) => poll.pollId)).not.toContain('b2-p1');
    expect(all.find((poll) => poll.pollId === 'b1-p0')).toBeDefined();
    for (const filter of filters(8, 1).slice(0, 8)) {
      expect(await store.pollResults(filter), JSON.stringify(filter)).toEqual(modelPollResults(events, filter, polls));
    }
    // The closing time decided something: without it, more votes count.
    const open = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }));
    const total = (results: Array<{ totalVotes: number }>) => results.reduce((sum, poll) => sum + poll.totalVotes, 0);
    const b1 = { tenantSeq: 1, broadcastId: 'b1' };
    expect(total(await open.pollResults(b1))).toBeGreaterThan(total(await store.pollResults(b1)));
    await db.close();
  });

  it('answers empty panels for a tenant without events', async () => {
    const db = await openDatabase();
    await storeWithCopies(db, dataset(1, 1));
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf(), 3: pollsOf() }));
    await expectModel(store, [], { tenantSeq: 3 });
    await db.close();
  });
});
