import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnalyticsFilter, AnalyticsStore } from '../src';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { dropLeftPendingTables, PENDING_TABLE_MAX_AGE_MS, PENDING_TABLE_PREFIX, SHARED_PENDING_ROLLUPS } from '../src/clickhouse/ch-pending-tables';
import { ClickHouseAnalyticsStore, RETIRE_INTERVAL_MS } from '../src/clickhouse/clickhouse-analytics-store';
import type { EventRow } from '../src/records';
import { dataset, HOUR, pollsOf, START } from './analytics-dataset';
import { modelContestEntries, modelCountries, modelEngagement, modelFunnel, modelPollResults, modelRevenue, modelRevenueMinutes, modelSponsorPerformance, modelViewerSeries } from './analytics-model';
import { expectModel, nextSecond, pollLookup, statementsOf, storeWithCopies } from './clickhouse-analytics-checks';
import { insertEvents } from './clickhouse-events';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';

const available = clickhouseAvailable();
const DERIVE_AT_ONCE = { quietSeconds: 0, settleSeconds: 1 };

/** Every panel of the filter asked for together, as the overview asks, checked against the model. */
async function expectPanelsTogether(store: AnalyticsStore, events: EventRow[], filter: AnalyticsFilter): Promise<void> {
  const [series, engagement, polls, sponsors, revenue, funnel, contests, minutes, countries] = await Promise.all([
    store.viewerSeries(filter),
    store.engagement(filter),
    store.pollResults(filter),
    store.sponsorPerformance(filter),
    store.revenue(filter),
    store.funnel(filter),
    store.contestEntries(filter),
    store.revenueMinutes(filter),
    store.countries(filter),
  ]);
  expect(series).toEqual(modelViewerSeries(events, filter));
  expect(engagement).toEqual(modelEngagement(events, filter));
  expect(polls).toEqual(modelPollResults(events, filter, pollsOf()));
  expect(sponsors).toEqual(modelSponsorPerformance(events, filter));
  expect(revenue).toEqual(modelRevenue(events, filter));
  expect(funnel).toEqual(modelFunnel(events, filter));
  expect(contests).toEqual(modelContestEntries(events, filter));
  expect(minutes).toEqual(modelRevenueMinutes(events, filter));
  expect(countries).toEqual(modelCountries(events, filter));
}

async function pendingTables(db: ChDatabase): Promise<string[]> {
  const rows = await db.query<{ name: string }>(`SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, '${PENDING_TABLE_PREFIX}')`);
  return rows.map((row) => row.name);
}

describe.skipIf(!available)('pending rows derived once per read (ClickHouse)', () => {
  let server: ClickHouseServer;
  let db: ChDatabase;
  let events: EventRow[];
  let store: ClickHouseAnalyticsStore;
  beforeAll(async () => {
    server = await startClickHouse();
    db = await ChDatabase.open(server.url, await server.createDatabase());
    events = dataset(4, 1);
    await storeWithCopies(db, events);
    await nextSecond();
    store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    await store.compact();
  }, 60_000);
  afterAll(() => server?.stop());

  it('derives the cut hours of a range once for the panels read together, and drops them when they are done', async () => {
    const cut = { tenantSeq: 1, fromMs: START + HOUR + 1234, toMs: START + 5 * HOUR - 4321 };
    const sent = await statementsOf(db, () => expectPanelsTogether(store, events, cut));
    const made = sent.filter((sql) => sql.startsWith(`CREATE TABLE ${PENDING_TABLE_PREFIX}`));
    expect(made).toHaveLength(SHARED_PENDING_ROLLUPS.length);
    // Only the tables read the events (and the votes' poll lookup, and the one panel not shared: contest entries).
    const readingEvents = sent.filter((sql) => /FROM events\b/.test(sql) && !sql.startsWith('CREATE') && !sql.includes('data_poll_id AS poll_id'));
    expect(readingEvents.map((sql) => sql.slice(0, 60))).toEqual([expect.stringContaining('contest_id')]);
    // Revenue and revenue over time count the orders' first reports in one statement.
    expect(sent.filter((sql) => sql.includes('argMin(order_ms, first_report)'))).toHaveLength(1);
    // Dropped when the last panel is done, before it answers.
    expect(await pendingTables(db)).toEqual([]);
    // Panels asked one by one each have tables of their own, dropped as well; narrowed filters read them too.
    for (const filter of [cut, { ...cut, campaignId: 1 }, { ...cut, broadcastId: 'b1', country: 'FR', sponsorId: 'bolt' }, { ...cut, country: 'DE' }]) {
      await expectModel(store, events, filter);
      await expectPanelsTogether(store, events, filter);
    }
    expect(await pendingTables(db)).toEqual([]);
  });

  it('drops a table whose making failed after the server made it, and derives on the spot for a while after a refusal', async () => {
    const cut = { tenantSeq: 1, fromMs: START + HOUR + 1234, toMs: START + 5 * HOUR - 4321 };
    const own = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    const command = db.command.bind(db);
    // The funnel's table is made, but its answer is lost on the way back.
    db.command = ((sql: string, ...rest: never[]) =>
      sql.startsWith(`CREATE TABLE ${PENDING_TABLE_PREFIX}`) && sql.includes("event = 'product.viewed'")
        ? command(sql, ...rest).then(() => Promise.reject(new Error('connection reset')))
        : command(sql, ...rest)) as typeof db.command;
    let sent: string[];
    try {
      sent = await statementsOf(db, () => expectPanelsTogether(own, events, cut));
    } finally {
      db.command = command;
    }
    expect(sent.filter((sql) => sql.startsWith(`CREATE TABLE ${PENDING_TABLE_PREFIX}`)).length).toBeGreaterThan(0);
    expect(await pendingTables(db)).toEqual([]);
    // The store now derives the pending rows in each statement, with no table, for a while.
    const after = await statementsOf(db, () => expectPanelsTogether(own, events, cut));
    expect(after.filter((sql) => sql.startsWith('CREATE'))).toEqual([]);
    expect(after.filter((sql) => /FROM events\b/.test(sql)).length).toBeGreaterThan(5);
    expect(await pendingTables(db)).toEqual([]);
  });

  it('makes the tables a lone panel reads, and only for the broadcast a read is of', async () => {
    const cut = { tenantSeq: 1, fromMs: START + HOUR + 1234, toMs: START + 5 * HOUR - 4321 };
    const sent = await statementsOf(db, async () => {
      expect(await store.revenue(cut)).toEqual(modelRevenue(events, cut));
    });
    expect(sent.filter((sql) => sql.startsWith('CREATE'))).toEqual([expect.stringContaining('order_id')]);
    const one = { ...cut, broadcastId: 'b2' };
    const ofOne = await statementsOf(db, () => expectPanelsTogether(store, events, one));
    const made = ofOne.filter((sql) => sql.startsWith('CREATE'));
    expect(made).toHaveLength(SHARED_PENDING_ROLLUPS.length);
    for (const sql of made) expect(sql).toContain("broadcast_id = 'b2'");
    expect(await pendingTables(db)).toEqual([]);
  });

  it('drops the tables reads left behind once they are old, at the next retirement', async () => {
    const now = Date.now();
    const old = `${PENDING_TABLE_PREFIX}${now - PENDING_TABLE_MAX_AGE_MS - 1}_left`;
    const recent = `${PENDING_TABLE_PREFIX}${now - 1_000}_inuse`;
    for (const name of [old, recent]) await db.command(`CREATE TABLE ${name} ENGINE = Memory AS SELECT 1 AS x`);
    expect(await dropLeftPendingTables(db, now)).toBe(1);
    expect(await pendingTables(db)).toEqual([recent]);
    // The store's compaction does it every retirement interval.
    let clock = now;
    const compacting = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), { ...DERIVE_AT_ONCE, clock: { now: () => clock } });
    await compacting.compact();
    expect(await pendingTables(db)).toEqual([recent]);
    clock = now + RETIRE_INTERVAL_MS + PENDING_TABLE_MAX_AGE_MS;
    await compacting.compact();
    expect(await pendingTables(db)).toEqual([]);
  });

  it('reads a broadcast with events in the pending times from its rows in every derived hour it has, the others from their answers', async () => {
    const hoursOf = new Map<string, Set<number>>();
    for (const event of events) {
      if (!hoursOf.has(event.broadcastId)) hoursOf.set(event.broadcastId, new Set());
      hoursOf.get(event.broadcastId)!.add(Math.floor(event.timestampMs / HOUR));
    }
    const [live] = [...hoursOf].sort((a, b) => b[1].size - a[1].size)[0]!;
    expect(hoursOf.get(live)!.size).toBeGreaterThan(2);
    const [answered] = await db.query<{ n: string }>(`SELECT count() AS n FROM broadcast_answered WHERE tenant_seq = 1`);
    expect(Number(answered!.n)).toBeGreaterThan(1);
    // A late event of the broadcast in its last hour: that hour is read from the events, the broadcast from its rows.
    const newest = events.filter((event) => event.broadcastId === live).sort((a, b) => b.timestampMs - a.timestampMs)[0]!;
    const late: EventRow = { ...newest, eventId: '0190a6a0-eeee-7000-8000-000000000001', event: 'product.viewed', timestampMs: newest.timestampMs + 1, receivedAtMs: newest.receivedAtMs + 1 };
    await insertEvents(db, [late]);
    const all = [...events, late];
    for (const filter of [{ tenantSeq: 1 }, { tenantSeq: 1, fromMs: START - HOUR, toMs: START + 20 * HOUR }]) {
      const sent = await statementsOf(db, () => expectPanelsTogether(store, all, filter));
      // Its rows on derived hours are read from the hours it has, not from every hour of the range.
      // (the hour of the late event is read from the events)
      const lateHour = Math.floor(late.timestampMs / HOUR);
      const hours = [...hoursOf.get(live)!].filter((hour) => hour !== lateHour).map((hour) => hour * HOUR).sort((a, b) => a - b);
      const viewers = sent.filter((sql) => sql.includes('groupBitOr(viewer_bits)'));
      expect(viewers).toHaveLength(1);
      expect(viewers[0]).toContain(`hour IN (${hours.join(', ')})`);
    }
  });
});
