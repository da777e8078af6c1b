import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom, type PollDefinition } from '@svc/protocol';
import { hashUserId, openEmbeddedStorage } from '../src';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { CH_MIGRATIONS } from '../src/clickhouse/ch-migrations';
import { ClickHouseAnalyticsStore } from '../src/clickhouse/clickhouse-analytics-store';
import type { EventRow } from '../src/records';
import { createPolls, dataset, filters, HOUR, pollsOf, SETTINGS, START } from './analytics-dataset';
import { modelPollResults } from './analytics-model';
import { expectModel, expectModelThroughDerivations, nextSecond, pollLookup, storeWithCopies } from './clickhouse-analytics-checks';
import { CH_ROLLUPS } from '../src/clickhouse/ch-rollups';
import { answersBefore } from '../src/clickhouse/ch-answer-retirement';
import { ClickHouseErasureStore } from '../src/clickhouse/clickhouse-erasure-store';
import { ClickHouseEventStore } from '../src/clickhouse/clickhouse-event-store';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';
import { insertEvents } from './clickhouse-events';

const available = clickhouseAvailable();
/** Hours are derived as soon as asked (a second after their last insert). */
const DERIVE_AT_ONCE = { quietSeconds: 0, settleSeconds: 1 };

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
  }, 180_000);

  it.each([4])('answers every panel as the raw events do from derived hours, and from events for hours stored into since (seed %i)', async (seed) => {
    const db = await openDatabase();
    const [tenant, other] = [1, 2];
    await insertEvents(db, dataset(seed, other));
    const lookup = pollLookup({ [tenant]: pollsOf(), [other]: pollsOf() });
    await expectModelThroughDerivations(db, dataset(seed, tenant), filters(seed, tenant).slice(0, 16), () => new ClickHouseAnalyticsStore(db, lookup, DERIVE_AT_ONCE));
    await db.close();
  }, 180_000);

  it('reads the hours derived before the upgrade that keys votes by numbers from the events, until they are derived again', async () => {
    const name = await server.createDatabase();
    const events = dataset(5, 1);
    const lookup = pollLookup({ 1: pollsOf() });
    // (With the columns of data's fields and the broadcasts' tables, which this release's derivation writes.)
    const before = await ChDatabase.open(server.url, name, { migrations: CH_MIGRATIONS.filter((migration) => migration.version !== 4) });
    await storeWithCopies(before, events);
    await nextSecond();
    await new ClickHouseAnalyticsStore(before, lookup, DERIVE_AT_ONCE).compact();
    // The vote table as the release before had it: without the voters' keys.
    await before.command('ALTER TABLE vote_hours DROP COLUMN voter_key');
    const derivedBefore = Number((await before.query<{ n: string }>('SELECT uniqExact(hour) AS n FROM rollup_versions'))[0]!.n);
    expect(derivedBefore).toBeGreaterThan(1);
    await before.close();

    const db = await ChDatabase.open(server.url, name);
    const store = new ClickHouseAnalyticsStore(db, lookup, DERIVE_AT_ONCE);
    expect(Number((await db.query<{ n: string }>('SELECT count() AS n FROM vote_hours'))[0]!.n)).toBe(0);
    const checked = filters(5, 1).slice(0, 4);
    for (const filter of checked) await expectModel(store, events, filter);
    await nextSecond();
    while ((await store.deriveHours()) > 0);
    expect(Number((await db.query<{ n: string }>('SELECT count() AS n FROM vote_hours'))[0]!.n)).toBeGreaterThan(0);
    for (const filter of checked) await expectModel(store, events, filter);
    await db.close();
  }, 120_000);

  it('leaves hours another node is deriving to that node, unless its claim has lapsed', async () => {
    const db = await openDatabase();
    const events = dataset(3, 1);
    await storeWithCopies(db, events);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    await nextSecond();
    const hours = (await db.query<{ hour: string }>('SELECT DISTINCT hour FROM touched_hours ORDER BY hour')).map((row) => Number(row.hour));
    // Another node began deriving the first hour just now, and the second one long ago (it was killed).
    await db.command(`INSERT INTO rollup_claims (tenant_seq, hour, claimed_at) VALUES (1, ${hours[0]}, toUInt32(now())), (1, ${hours[1]}, toUInt32(now()) - 601)`);
    await store.compact();
    const derived = (await db.query<{ hour: string }>('SELECT DISTINCT hour FROM rollup_versions ORDER BY hour')).map((row) => Number(row.hour));
    expect(derived).toEqual(hours.slice(1));
    // The claimed hour is read from the events meanwhile.
    for (const filter of filters(3, 1).slice(0, 4)) await expectModel(store, events, filter);
    await db.close();
  }, 60_000);

  it('takes an erased user and purged events out of the derived hours too', async () => {
    const db = await openDatabase();
    const events = dataset(6, 1);
    await storeWithCopies(db, events);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    await nextSecond();
    await store.compact();
    const checked = filters(6, 1).slice(0, 8);
    const rollupRowsOf = async (condition: string) => {
      let rows = 0;
      for (const { table } of CH_ROLLUPS) rows += Number((await db.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE ${condition}`))[0]!.n);
      return rows;
    };
    expect(await rollupRowsOf(`user_id = 'u3'`)).toBeGreaterThan(0);
    // The answers kept per broadcast hold the user's viewer key.
    const keptOfUser = async () => Number((await db.query<{ n: string }>(`SELECT count() AS n FROM broadcast_answers WHERE key = cityHash64('u3')`))[0]!.n);
    expect(await keptOfUser()).toBeGreaterThan(0);
    // Deletions are mutations, which run as merges.
    await db.command('SYSTEM START MERGES events');
    await new ClickHouseErasureStore(db).erase({ tenantSeq: 1, userHash: hashUserId('u3') }, 'u3');
    expect(await rollupRowsOf(`user_id = 'u3'`)).toBe(0);
    expect(await keptOfUser()).toBe(0);
    let left = events.filter((event) => event.userId !== 'u3');
    for (const filter of checked) await expectModel(store, left, filter);

    const cutoff = START + 3 * HOUR + 1234;
    // Answers made again since the erasure, from hours the purge then takes: they go with them.
    await nextSecond();
    await store.compact();
    const answersBeforeCutoff = async () => Number((await db.query<{ n: string }>(`SELECT count() AS n FROM broadcast_answered WHERE ${answersBefore(1, cutoff)}`))[0]!.n);
    expect(await answersBeforeCutoff()).toBeGreaterThan(0);
    await new ClickHouseEventStore(db).purgeEventsBefore(1, cutoff);
    expect(await rollupRowsOf(`tenant_seq = 1 AND hour < ${cutoff}`)).toBe(0);
    expect(await answersBeforeCutoff()).toBe(0);
    left = left.filter((event) => event.timestampMs >= cutoff);
    for (const filter of checked) await expectModel(store, left, filter);
    await nextSecond();
    await store.compact();
    for (const filter of checked) await expectModel(store, left, filter);
    await db.close();
  }, 180_000);

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
        expect(await ch.viewerSeries(filter), label).toEqual(await duck.viewerSeries(filter));
        expect(await ch.engagement(filter), label).toEqual(await duck.engagement(filter));
        expect(await ch.pollResults(filter), label).toEqual(await duck.pollResults(filter));
        expect(await ch.sponsorPerformance(filter), label).toEqual(await duck.sponsorPerformance(filter));
        expect(await ch.revenue(filter), label).toEqual(await duck.revenue(filter));
        expect(await ch.funnel(filter), label).toEqual(await duck.funnel(filter));
        expect(await ch.contestEntries(filter), label).toEqual(await duck.contestEntries(filter));
        expect(await ch.revenueMinutes(filter), label).toEqual(await duck.revenueMinutes(filter));
        expect(await ch.countries(filter), label).toEqual(await duck.countries(filter));
      }
    } finally {
      await Promise.all([storage.close(), db.close()]);
    }
  }, 180_000);

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

  it("counts a session's anonymous first vote though the session voted again signed in, from events and from derived hours", async () => {
    const db = await openDatabase();
    const base = dataset(1, 1)[0]!;
    const vote = (eventId: string, sessionId: string, userId: string | null, at: number, optionIndex: number): EventRow => ({
      ...base, eventId, event: 'poll.voted', sessionId, userId, broadcastId: 'b1', timestampMs: at, receivedAtMs: at,
      data: JSON.stringify({ pollId: 'b1-p0', questionText: 'Question of b1', optionSelected: `Option ${optionIndex}`, optionIndex }),
    });
    const events = [
      // svc_a votes anonymously, then signs in as u1 and votes again: its first vote counts.
      vote('10000000-0000-7000-8000-000000000001', 'svc_a', null, START + HOUR, 0),
      vote('10000000-0000-7000-8000-000000000002', 'svc_a', 'u1', START + HOUR + 5_000, 1),
      // u1 votes in another session later: not the first vote of u1 (svc_a's second was).
      vote('10000000-0000-7000-8000-000000000003', 'svc_b', 'u1', START + 2 * HOUR, 2),
    ];
    await storeWithCopies(db, events);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    const expected = modelPollResults(events, { tenantSeq: 1 }, pollsOf());
    expect(expected[0]!.options.map((o) => o.votes)).toEqual([1, 0, 0]);
    expect(await store.pollResults({ tenantSeq: 1 })).toEqual(expected);
    await nextSecond();
    await store.compact();
    expect(await store.pollResults({ tenantSeq: 1 })).toEqual(expected);
    await db.close();
  }, 60_000);

  it('breaks ties within one millisecond by the smaller event id, as the vote rule and "first report" do', async () => {
    const db = await openDatabase();
    const at = START + HOUR;
    const base = dataset(1, 1)[0]!;
    const event = (eventId: string, name: string, sessionId: string, userId: string | null, data: Record<string, unknown>, extra: Partial<EventRow> = {}): EventRow => ({
      ...base, eventId, event: name, sessionId, userId, broadcastId: 'b1', timestampMs: at, receivedAtMs: at, data: JSON.stringify(data), ...extra,
    });
    const vote = (optionIndex: number) => ({ pollId: 'b1-p0', questionText: 'Question of b1', optionSelected: `Option ${optionIndex}`, optionIndex });
    const order = (total: number) => ({ orderId: 'o1', sponsorId: 'acme', total, items: '[{"productId":"p","quantity":1,"unitPrice":1,"currency":"EUR"}]' } satisfies Partial<EventRow>);
    // Ids that sort one way as text and the other way as ClickHouse orders UUIDs.
    const [low, high] = ['0fffffff-ffff-7fff-bfff-ffffffffffff', '10000000-0000-7000-8000-000000000000'];
    const events = [
      event(high, 'poll.voted', 'svc_a', 'u1', vote(0)),
      event(low, 'poll.voted', 'svc_b', 'u1', vote(2)),
      event('20000000-0000-7000-8000-000000000000', 'poll.voted', 'svc_c', null, vote(1)),
      event('10000001-0000-7000-8000-000000000000', 'checkout.completed', 'svc_a', 'u1', { currency: 'USD' }, order(10)),
      event('0ffffffe-ffff-7fff-bfff-ffffffffffff', 'checkout.completed', 'svc_b', 'u1', { currency: 'EUR' }, order(20)),
    ];
    await storeWithCopies(db, events);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    const filter = { tenantSeq: 1 };
    const expectTiesBroken = async () => {
      expect((await store.pollResults(filter))[0]!.options.map((o) => o.votes)).toEqual([0, 1, 1]);
      expect(await store.revenue(filter)).toEqual([{ currency: 'EUR', orders: 1, gross: 20, items: 1 }]);
      await expectModel(store, events, filter);
    };
    // Read from the events, then from the rollups of the derived hour.
    await expectTiesBroken();
    await nextSecond();
    await store.compact();
    expect(Number((await db.query<{ n: string }>('SELECT count() AS n FROM vote_hours'))[0]!.n)).toBeGreaterThan(0);
    await expectTiesBroken();
    await db.close();
  }, 60_000);

  it.each([11, 12])('applies the vote rule to votes crowded into a few milliseconds, under filters, from events, derived hours and both (seed %i)', async (seed) => {
    const db = await openDatabase();
    const next = seededRandom(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const hex = (n: number) => Array.from({ length: n }, () => Math.floor(next() * 16).toString(16)).join('');
    const polls = pollsOf().filter((poll) => poll.createdAtMs < START);
    const base = dataset(1, 1)[0]!;
    // 25 milliseconds over three hours, twenty sessions, anonymous and signed-in voters, two countries.
    const times = Array.from({ length: 25 }, () => START + Math.floor(next() * 3 * HOUR));
    const vote = (timestampMs = pick(times)): EventRow => {
      const poll = pick(polls);
      const optionIndex = Math.floor(next() * 3);
      return {
        ...base, eventId: `${hex(8)}-${hex(4)}-7${hex(3)}-8${hex(3)}-${hex(12)}`, event: 'poll.voted', sessionId: `svc_${Math.floor(next() * 20)}`,
        userId: pick([null, null, 'u0', 'u1', 'u2', 'u3']), broadcastId: poll.broadcastId, country: pick(['DE', 'FR']), timestampMs, receivedAtMs: timestampMs,
        data: JSON.stringify({ pollId: poll.id, questionText: poll.question, optionSelected: `Option ${optionIndex}`, optionIndex }),
      };
    };
    const events = Array.from({ length: 300 }, () => vote());
    const checked = [
      { tenantSeq: 1 }, { tenantSeq: 1, country: 'DE' }, { tenantSeq: 1, broadcastId: polls[0]!.broadcastId },
      { tenantSeq: 1, fromMs: START + HOUR / 2, toMs: START + 2 * HOUR + 1_234 },
      { tenantSeq: 1, fromMs: START + HOUR, toMs: START + 3 * HOUR, country: 'FR' },
    ];
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: polls }), DERIVE_AT_ONCE);
    const expectRule = async (stored: EventRow[]) => {
      for (const filter of checked) expect(await store.pollResults(filter), JSON.stringify(filter)).toEqual(modelPollResults(stored, filter, polls));
    };
    await storeWithCopies(db, events);
    await expectRule(events);
    await nextSecond();
    while ((await store.deriveHours()) > 0);
    await expectRule(events);
    // Late votes into the first hour: read from the events beside the derived hours.
    const late = Array.from({ length: 40 }, () => vote(pick(times.filter((t) => t < START + HOUR).concat(START))));
    await insertEvents(db, late);
    await expectRule([...events, ...late]);
    await db.close();
  }, 120_000);

  it("reads a tenant with thousands of polls (a query larger than the server's default limit)", async () => {
    const db = await openDatabase();
    const base = dataset(1, 1)[0]!;
    const polls: PollDefinition[] = [];
    const events: EventRow[] = [];
    for (let i = 0; i < 3_000; i++) {
      const options = ['A rather long first option label', 'A rather long second option label', `Option ${i}`];
      polls.push({ id: `poll-${i}`, broadcastId: 'b1', question: `Question ${i}`, options, createdAtMs: 0 });
      const eventId = `0190a6a0-0000-7000-8000-${i.toString(16).padStart(12, '0')}`;
      const data = { pollId: `poll-${i}`, questionText: `Question ${i}`, optionSelected: options[i % 3], optionIndex: i % 3 };
      events.push({ ...base, eventId, event: 'poll.voted', sessionId: `svc_${i}`, userId: null, broadcastId: 'b1', timestampMs: START + i, receivedAtMs: START + i, data: JSON.stringify(data) });
    }
    await storeWithCopies(db, events);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: polls }), DERIVE_AT_ONCE);
    const expectEachVote = async () => {
      const results = await store.pollResults({ tenantSeq: 1 });
      expect(results).toHaveLength(3_000);
      // Each poll has its one vote, on option i % 3.
      for (const poll of results) {
        const i = Number(poll.pollId.slice('poll-'.length));
        expect(poll.options.map((o) => o.votes), poll.pollId).toEqual([0, 1, 2].map((option) => (option === i % 3 ? 1 : 0)));
      }
    };
    await expectEachVote();
    // The derivation checks the votes against every poll too.
    await nextSecond();
    await store.compact();
    expect(Number((await db.query<{ n: string }>('SELECT count() AS n FROM vote_hours'))[0]!.n)).toBe(3_000);
    await expectEachVote();
    await db.close();
  }, 60_000);

  it('reads the top-level fields of data, not the same keys nested in custom context before them', async () => {
    const db = await openDatabase();
    const base = dataset(1, 1)[0]!;
    let n = 0;
    const event = (name: string, sessionId: string, data: string, extra: Partial<EventRow> = {}): EventRow => ({
      ...base, eventId: `0190a6a0-0000-7000-8000-${(++n).toString(16).padStart(12, '0')}`, event: name, sessionId, userId: null, broadcastId: 'b1',
      country: 'DE', timestampMs: START + n * 1000, receivedAtMs: START + n * 1000, data, ...extra,
    });
    const line = '[{"productId":"p","quantity":2,"unitPrice":1,"currency":"EUR"}]';
    const events = [
      // Nested keys first, a key that ends in the name (`a"sponsorId`), strings holding brackets and keys.
      event('sponsor_moment.viewed', 'svc_a', '{"ctx":{"sponsorId":"evil","l":["{"]},"a\\"sponsorId":"x","momentId":"m","sponsorId":"acme"}'),
      event('sponsor_moment.tapped', 'svc_a', '{"s":"{\\"sponsorId\\":\\"evil\\"","momentId":"m","sponsorId":"acme"}'),
      event('poll.voted', 'svc_a', '{"ctx":{"pollId":"b1-p1","optionIndex":2,"optionSelected":"Option 2"},"pollId":"b1-p0","questionText":"q","optionSelected":"Option 1","optionIndex":1}'),
      // Only nested: the event names no sponsor in its data.
      event('product.viewed', 'svc_b', '{"ctx":{"sponsorId":"acme"},"productId":"p"}', { items: '[]', total: 0 }),
      event('checkout.completed', 'svc_a', '{"cart":{"currency":"USD"},"currency":"EUR"}', { orderId: 'o1', sponsorId: 'acme', items: line, total: 2 }),
    ];
    await storeWithCopies(db, events);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }));
    for (const filter of [{ tenantSeq: 1 }, { tenantSeq: 1, sponsorId: 'acme' }, { tenantSeq: 1, sponsorId: 'evil' }]) await expectModel(store, events, filter);
    expect((await store.sponsorPerformance({ tenantSeq: 1 })).map((row) => [row.sponsorId, row.impressions, row.taps])).toEqual([['acme', 1, 1]]);
    expect((await store.pollResults({ tenantSeq: 1 })).map((poll) => [poll.pollId, poll.options.map((o) => o.votes)])).toEqual([['b1-p0', [0, 1, 0]]]);
    expect((await store.revenue({ tenantSeq: 1 })).map((row) => row.currency)).toEqual(['EUR']);
    expect((await store.funnel({ tenantSeq: 1, sponsorId: 'acme' })).productViewed).toBe(0);
    await db.close();
  }, 60_000);

  it('answers empty panels for a tenant without events', async () => {
    const db = await openDatabase();
    await storeWithCopies(db, dataset(1, 1));
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf(), 3: pollsOf() }));
    await expectModel(store, [], { tenantSeq: 3 });
    await db.close();
  });
});
