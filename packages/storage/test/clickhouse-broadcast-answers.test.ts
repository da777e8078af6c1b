import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnalyticsFilter } from '../src';
import { BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE, BROADCAST_HOURS_TABLE } from '../src/clickhouse/ch-broadcast-tables';
import { FLAGGING_ANSWER_IDS, FUNNEL_COUNTS_KEPT } from '../src/clickhouse/ch-broadcast-answers';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { ClickHouseAnalyticsStore } from '../src/clickhouse/clickhouse-analytics-store';
import type { EventRow } from '../src/records';
import { dataset, HOUR, pollsOf, START } from './analytics-dataset';
import { modelEngagement, modelFunnel, modelPollResults, modelViewerSeries } from './analytics-model';
import { expectModel, nextSecond, pollLookup, statementsOf, storeWithCopies } from './clickhouse-analytics-checks';
import { insertEvents } from './clickhouse-events';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';

const available = clickhouseAvailable();
/** Hours are derived as soon as asked (a second after their last insert). */
const DERIVE_AT_ONCE = { quietSeconds: 0, settleSeconds: 1 };
/** Added to every kept answer: a poll whose result shows it was answered from them. */
const MARK = 1_000;

/** Adds MARK to the votes of the kept answers matching `where`, so that a read that uses them shows it. */
async function markAnswers(db: ChDatabase, where = '1'): Promise<void> {
  await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} UPDATE count = count + ${MARK} WHERE panel = 'poll' AND ${where}`);
  await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
}

/** Per poll, how far its total is above the raw events' (a multiple of MARK where the answers were read). */
async function marksOf(store: ClickHouseAnalyticsStore, events: EventRow[], filter: AnalyticsFilter): Promise<Map<string, number>> {
  const model = new Map(modelPollResults(events, filter, pollsOf()).map((poll) => [poll.pollId, poll.totalVotes]));
  const read = await store.pollResults(filter);
  expect(read.map((poll) => poll.pollId).sort()).toEqual([...model.keys()].sort());
  return new Map(read.map((poll) => [poll.pollId, (poll.totalVotes - model.get(poll.pollId)!) / MARK]));
}

describe.skipIf(!available)('answers kept per broadcast (ClickHouse)', () => {
  let server: ClickHouseServer;
  beforeAll(async () => {
    server = await startClickHouse();
  }, 60_000);
  afterAll(() => server?.stop());

  /** A database of its own holding `events` (with copies), every hour derived and every broadcast answered. */
  async function compacted(events: EventRow[]): Promise<{ db: ChDatabase; store: ClickHouseAnalyticsStore }> {
    const db = await ChDatabase.open(server.url, await server.createDatabase());
    await storeWithCopies(db, events);
    await nextSecond();
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    await store.compact();
    return { db, store };
  }

  it('answers the panels of broadcasts a range holds whole from them, and of the others from the rows', async () => {
    const db = await ChDatabase.open(server.url, await server.createDatabase());
    // With one session whose funnel crosses two broadcasts: a view in b1, the rest in b2.
    const crossing = (n: number, event: string, broadcastId: string, minute: number, commerce: Partial<EventRow> = {}): EventRow => ({
      tenantSeq: 1, eventId: `0190a6a0-ffff-7000-8000-${String(n).padStart(12, '0')}`, event, userId: null, sessionId: 'svc_crossing', broadcastId,
      campaignId: 1, timestampMs: START + minute * 60_000 + 7, receivedAtMs: START + minute * 60_000 + 7, country: null, orderId: null,
      sponsorId: null, total: null, items: null, data: '{}', ...commerce,
    });
    const events = [
      ...dataset(6, 1),
      crossing(1, 'product.viewed', 'b1', 30),
      crossing(2, 'cart.item_added', 'b2', 40),
      crossing(3, 'checkout.started', 'b2', 45),
      crossing(4, 'checkout.completed', 'b2', 50, { orderId: 'o-crossing', items: '[]', total: 0, data: '{"currency":"EUR"}' }),
    ];
    // Another tenant's broadcast in the same hours is none of this tenant's.
    const elsewhere = { ...crossing(5, 'broadcast.joined', 'elsewhere', 30), tenantSeq: 2, sessionId: 'svc_elsewhere' };
    await insertEvents(db, [elsewhere]);
    await storeWithCopies(db, events);
    await nextSecond();
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf(), 2: pollsOf() }), DERIVE_AT_ONCE);
    await store.compact();
    const [made] = await db.query<{ n: string }>(`SELECT uniqExact(broadcast_id) AS n FROM ${BROADCAST_ANSWERED_TABLE} WHERE tenant_seq = 1`);
    expect(Number(made!.n)).toBe(3);
    const [mixed] = await db.query<{ n: string }>(`SELECT count() AS n FROM ${BROADCAST_HOURS_TABLE} WHERE tenant_seq = 1 AND broadcast_id = 'elsewhere'`);
    expect(Number(mixed!.n)).toBe(0);
    // Kept answers give the raw events' results.
    const whole = { tenantSeq: 1 };
    for (const filter of [whole, { tenantSeq: 1, broadcastId: 'b2' }, { tenantSeq: 1, fromMs: START - HOUR, toMs: START + 12 * HOUR }]) {
      await expectModel(store, events, filter);
    }
    // The viewer panels read them too: the sessions kept are counted.
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} UPDATE count = count + ${MARK} WHERE panel = 'sessions'`);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    expect((await store.viewerSeries(whole)).sessions).toBe(modelViewerSeries(events, whole).sessions + 3 * MARK);
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} UPDATE count = count - ${MARK} WHERE panel = 'sessions'`);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    await markAnswers(db);
    // Ranges that hold every broadcast whole read every poll from them…
    for (const filter of [whole, { tenantSeq: 1, broadcastId: 'b2' }, { tenantSeq: 1, fromMs: START - HOUR, toMs: START + 12 * HOUR }]) {
      const marks = await marksOf(store, events, filter);
      expect(marks.size, JSON.stringify(filter)).toBeGreaterThan(0);
      for (const [pollId, mark] of marks) expect(mark, `${pollId} ${JSON.stringify(filter)}`).toBeGreaterThan(0);
    }
    // …and no other does: a range that cuts the broadcasts, or a narrowing within them.
    for (const filter of [{ tenantSeq: 1, fromMs: START + HOUR }, { tenantSeq: 1, toMs: START + 5 * HOUR }, { tenantSeq: 1, country: 'DE' }, { tenantSeq: 1, campaignId: 1 }]) {
      await expectModel(store, events, filter);
    }
    // An hour derived by a release that does not record its broadcasts (beside this one in a
    // rolling upgrade): which broadcasts it holds is unknown, so no answer serves a range with it.
    // Answers made then leave its rows out.
    await db.command(`ALTER TABLE ${BROADCAST_HOURS_TABLE} DELETE WHERE hour = ${START + 2 * HOUR}`);
    await db.waitForMutations(BROADCAST_HOURS_TABLE);
    expect(await store.answerBroadcasts()).toBe(3);
    await expectModel(store, events, whole);
    await db.close();
  }, 120_000);

  it("leaves a broadcast's answer unused once an hour of it is stored into, and makes it again once that hour is derived again", async () => {
    const all = dataset(7, 1);
    // A vote on b1 in its last hour comes late.
    const lateIndex = all.findLastIndex((e) => e.event === 'poll.voted' && e.broadcastId === 'b1');
    const late = all[lateIndex]!;
    const early = all.filter((_, i) => i !== lateIndex);
    const { db, store } = await compacted(early);
    await markAnswers(db);
    const whole = { tenantSeq: 1 };
    const b1 = (marks: Map<string, number>) => [...marks].filter(([pollId]) => pollId.startsWith('b1-')).map(([, mark]) => mark);
    expect(b1(await marksOf(store, early, whole)).every((mark) => mark > 0)).toBe(true);
    await insertEvents(db, [late]);
    // That hour is read from the events now: b1's answer (marked) is not used.
    const stale = await marksOf(store, all, whole);
    expect(b1(stale).length).toBeGreaterThan(0);
    expect(b1(stale)).toEqual(b1(stale).map(() => 0));
    await nextSecond();
    await store.compact();
    // Derived again: a new answer for b1 (not marked) from the new rows.
    expect(b1(await marksOf(store, all, whole))).toEqual(b1(stale));
    const [answers] = await db.query<{ n: string }>(`SELECT count() AS n FROM ${BROADCAST_ANSWERED_TABLE} WHERE broadcast_id = 'b1'`);
    expect(Number(answers!.n)).toBe(2);
    await markAnswers(db, `broadcast_id = 'b1' AND count < ${MARK}`);
    expect(b1(await marksOf(store, all, whole)).every((mark) => mark > 0)).toBe(true);
    // The answers made from the rows before are retired (at once, here); those in use stay.
    await nextSecond();
    const retired = await store.retireAnswers(0);
    expect(retired.retired).toBeGreaterThan(0);
    expect(retired.deleting).toBe(true);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    await db.waitForMutations(BROADCAST_ANSWERED_TABLE);
    const [left] = await db.query<{ n: string }>(`SELECT count() AS n FROM ${BROADCAST_ANSWERED_TABLE} WHERE broadcast_id = 'b1'`);
    expect(Number(left!.n)).toBe(1);
    expect((await store.retireAnswers(0)).retired).toBe(0);
    expect(b1(await marksOf(store, all, whole)).every((mark) => mark > 0)).toBe(true);
    await db.close();
  }, 120_000);

  it('makes the answers of hours derived before the upgrade that keeps them', async () => {
    const name = await server.createDatabase();
    const events = dataset(8, 1);
    let db = await ChDatabase.open(server.url, name);
    await storeWithCopies(db, events);
    await nextSecond();
    await new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE).deriveHours();
    // The database as the release before left it: no broadcasts' tables, migration 6 not applied.
    await db.command(`DROP TABLE ${BROADCAST_HOURS_TABLE}`);
    await db.command(`DROP TABLE ${BROADCAST_ANSWERS_TABLE}`);
    await db.command(`DROP TABLE ${BROADCAST_ANSWERED_TABLE}`);
    await db.command('ALTER TABLE schema_migrations DELETE WHERE version = 6');
    await db.waitForMutations('schema_migrations');
    await db.close();

    db = await ChDatabase.open(server.url, name);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    const [hours] = await db.query<{ n: string }>(`SELECT uniqExact(hour) AS n FROM ${BROADCAST_HOURS_TABLE}`);
    expect(Number(hours!.n)).toBeGreaterThan(5);
    // No hour to derive again: the answers are made from the rows already derived.
    expect(await store.deriveHours()).toBe(0);
    expect(await store.answerBroadcasts()).toBe(3);
    expect(await store.answerBroadcasts()).toBe(0);
    await expectModel(store, events, { tenantSeq: 1 });
    await markAnswers(db);
    const marks = await marksOf(store, events, { tenantSeq: 1 });
    expect([...marks.values()].every((mark) => mark > 0)).toBe(true);
    await db.close();
  }, 120_000);

  it("counts the funnel of whole broadcasts from their kept counts, reading their sessions only when one crosses into rows read, and from the sessions for answers made before the counts", async () => {
    const events = dataset(9, 1);
    const { db, store } = await compacted(events);
    const whole = { tenantSeq: 1 };
    const model = modelFunnel(events, whole);
    expect(model.checkoutCompleted).toBeGreaterThan(0);
    // Every broadcast whole and none crossing: the counts alone, no kept session and no row read.
    const sent = await statementsOf(db, async () => expect(await store.funnel(whole)).toEqual(model));
    expect(sent.filter((sql) => sql.includes("'funnel_count'"))).toHaveLength(1);
    expect(sent.filter((sql) => sql.includes("'funnel_session'") || sql.includes('funnel_hours'))).toEqual([]);
    // The counts are what is read: marked, they show.
    const shift = (by: number) => db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} UPDATE count = count + ${by} WHERE panel = 'funnel_count' AND number = 4`);
    const [completing] = await db.query<{ n: string }>(`SELECT count() AS n FROM ${BROADCAST_ANSWERS_TABLE} WHERE panel = 'funnel_count' AND number = 4`);
    const marked = Number(completing!.n) * MARK;
    expect(marked).toBeGreaterThan(0);
    await shift(MARK);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    expect(await store.funnel(whole)).toEqual({ productViewed: model.productViewed + marked, cartItemAdded: model.cartItemAdded + marked, checkoutStarted: model.checkoutStarted + marked, checkoutCompleted: model.checkoutCompleted + marked });
    await shift(-MARK);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    // A session of a kept broadcast with an event of a new broadcast in an hour being stored into
    // (read from the events): counted once, from all its rows.
    const viewed = new Set(events.filter((e) => e.event === 'product.viewed' && e.broadcastId === 'b1').map((e) => e.sessionId));
    const session = events.find((e) => e.event === 'cart.item_added' && viewed.has(e.sessionId) && e.broadcastId === 'b1')!;
    const lastMs = Math.max(...events.map((e) => e.timestampMs));
    const moved: EventRow = { ...session, eventId: '0190a6a0-ffff-7000-8000-00000000c0de', event: 'checkout.started', broadcastId: 'b-later', timestampMs: lastMs + 2 * HOUR, receivedAtMs: lastMs + 2 * HOUR };
    const later = [...events, moved];
    await insertEvents(db, [moved]);
    // The kept counts say no kept session crosses broadcasts: only the rows' keys are looked for among the kept sessions.
    const overlapping = await statementsOf(db, async () => expect(await store.funnel(whole)).toEqual(modelFunnel(later, whole)));
    const overlaps = overlapping.filter((sql) => sql.includes("'funnel_session'"));
    expect(overlaps.length).toBeGreaterThan(0);
    expect(overlaps.filter((sql) => sql.includes('number < 0'))).toEqual([]);
    // Its hour derived, the new broadcast not answered yet: read from its rows on that derived hour.
    await nextSecond();
    expect(await store.deriveHours()).toBe(1);
    expect(await store.funnel(whole)).toEqual(modelFunnel(later, whole));
    await store.compact();
    // Derived: that session crosses two kept broadcasts (b1's answer, made before, does not say so);
    // the kept counts say a kept session crosses, and the kept crossing sessions are looked for.
    const crossed = await statementsOf(db, async () => expect(await store.funnel(whole)).toEqual(modelFunnel(later, whole)));
    // (From the counts: the overlap statement, which only that path sends, holds them.)
    expect(crossed.filter((sql) => sql.startsWith('SELECT count() AS n') && sql.includes('number < 0'))).toHaveLength(1);
    // Answers made before answers kept their counts (no mark): read from their sessions.
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} DELETE WHERE panel = 'funnel_count' AND number = ${FUNNEL_COUNTS_KEPT} AND broadcast_id = 'b1'`);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    await shift(MARK);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    for (const filter of [whole, { tenantSeq: 1, fromMs: START - HOUR, toMs: START + 12 * HOUR }, { tenantSeq: 1, broadcastId: 'b1' }]) {
      expect(await store.funnel(filter), JSON.stringify(filter)).toEqual(modelFunnel(later, filter));
    }
    // b2's answer has them: read from its (marked) counts.
    const b2 = { tenantSeq: 1, broadcastId: 'b2' };
    expect((await store.funnel(b2)).checkoutCompleted).toBe(modelFunnel(later, b2).checkoutCompleted + MARK);
    await shift(-MARK);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    // The next compaction counts b1's kept sessions (here a second time, as after a run cut short
    // before its mark): the counts are read, each once.
    expect(await store.answerBroadcasts()).toBe(1);
    expect(await store.answerBroadcasts()).toBe(0);
    const [twice] = await db.query<{ rows: string; numbers: string }>(
      `SELECT count() AS rows, uniqExact(number) AS numbers FROM ${BROADCAST_ANSWERS_TABLE} WHERE panel = 'funnel_count' AND number != ${FUNNEL_COUNTS_KEPT}
         AND answer = (SELECT argMax(answer, computed_at) FROM ${BROADCAST_ANSWERED_TABLE} WHERE broadcast_id = 'b1')`,
    );
    expect(Number(twice!.rows)).toBe(2 * Number(twice!.numbers));
    const counted = await statementsOf(db, async () => expect(await store.funnel(whole)).toEqual(modelFunnel(later, whole)));
    expect(counted.filter((sql) => sql.includes("'funnel_count'"))).toHaveLength(1);
    await db.close();
  }, 120_000);
  it('counts the viewers of the series and engagement in one grouping of the kept viewer rows, and with their joined sessions\' viewers for answers made before the rows flagged them', async () => {
    const events = dataset(11, 1);
    const { db, store } = await compacted(events);
    const whole = { tenantSeq: 1 };
    const half = { tenantSeq: 1, fromMs: START - HOUR, toMs: START + 3 * HOUR + 1234 };
    const rowsOf = async (where: string) =>
      Number((await db.query<{ n: string }>(`SELECT count() AS n FROM ${BROADCAST_ANSWERS_TABLE} WHERE ${where}`))[0]!.n);
    // b1 is answered, its viewer rows flag viewers of joined sessions.
    expect(await rowsOf("panel = 'sessions' AND broadcast_id = 'b1' AND number = 1")).toBe(1);
    expect(await rowsOf("panel = 'viewer' AND broadcast_id = 'b1' AND count = 2")).toBeGreaterThan(0);
    const expectViewers = async (label: string) => {
      for (const filter of [whole, half, { tenantSeq: 1, broadcastId: 'b1' }]) {
        const [series, engagement] = await Promise.all([store.viewerSeries(filter), store.engagement(filter)]);
        expect(series, `${label} ${JSON.stringify(filter)}`).toEqual(modelViewerSeries(events, filter));
        expect(engagement, `${label} ${JSON.stringify(filter)}`).toEqual(modelEngagement(events, filter));
      }
    };
    // Read together, the two panels group the viewers once.
    const sent = await statementsOf(db, () => expectViewers('flagged'));
    expect(sent.filter((sql) => sql.includes('groupBitOr'))).toHaveLength(3);
    expect(sent.filter((sql) => sql.includes('groupBitOr') && sql.includes("panel = 'viewer'")).length).toBeGreaterThan(0);
    // Answers made now flag their viewers (their ids say so): no joined session's viewer is read.
    expect(sent.filter((sql) => sql.includes("'joined_viewer'"))).toEqual([]);
    expect(sent.filter((sql) => sql.includes('uniqExact'))).toEqual([]);
    // Flagged rows are read, not the joined sessions' viewers: made-up keys there count nowhere.
    const moveJoinedKeys = async () => {
      await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} UPDATE key = bitXor(key, 1) WHERE panel = 'joined_viewer'`);
      await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    };
    await moveJoinedKeys();
    await expectViewers('joined viewers moved');
    await moveJoinedKeys();
    // b1's answer made before its viewer rows flagged the viewers of its joined sessions (an id
    // below FLAGGING_ANSWER_IDS, no flags): read with its joined sessions' viewers.
    const [made] = await db.query<{ answer: string }>(`SELECT answer FROM ${BROADCAST_ANSWERED_TABLE} WHERE broadcast_id = 'b1'`);
    const [madeId, olderId] = [Number(made!.answer), Number(made!.answer) - FLAGGING_ANSWER_IDS];
    expect(olderId).toBeGreaterThan(0);
    await db.command(
      `INSERT INTO ${BROADCAST_ANSWERS_TABLE} (tenant_seq, panel, answer, broadcast_id, text, key, number, count)
       SELECT tenant_seq, panel, toUInt64(${olderId}), broadcast_id, text, key, number, count FROM ${BROADCAST_ANSWERS_TABLE} WHERE answer = ${madeId}`,
    );
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} DELETE WHERE answer = ${madeId}`);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERED_TABLE} UPDATE answer = ${olderId} WHERE answer = ${madeId}`);
    await db.waitForMutations(BROADCAST_ANSWERED_TABLE);
    // An older id is checked by its sessions row: flagged there, its joined viewers (moved: made-up keys) count nowhere.
    const checked = await statementsOf(db, () => expectViewers('b1 made with an older id, flagged'));
    expect(checked.filter((sql) => sql.includes("'joined_viewer'")).length).toBeGreaterThan(0);
    await moveJoinedKeys();
    await expectViewers('b1 made with an older id, flagged, joined viewers moved');
    await moveJoinedKeys();
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} UPDATE count = 0 WHERE panel = 'viewer' AND broadcast_id = 'b1'`);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    await db.command(`ALTER TABLE ${BROADCAST_ANSWERS_TABLE} UPDATE number = 0 WHERE panel = 'sessions' AND broadcast_id = 'b1'`);
    await db.waitForMutations(BROADCAST_ANSWERS_TABLE);
    expect(await rowsOf("panel = 'viewer' AND broadcast_id = 'b1' AND count != 0")).toBe(0);
    expect(await rowsOf("panel = 'sessions' AND broadcast_id = 'b1' AND number = 0")).toBe(1);
    await expectViewers('b1 unflagged');
    await db.close();
  }, 120_000);
});
