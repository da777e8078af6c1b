import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { seededRandom, type PollDefinition } from '@svc/protocol';
import { openEmbeddedStorage, type AnalyticsFilter, type Storage } from '../src';
import type { EventRow } from '../src/records';
import { modelEngagement, modelFunnel, modelPollResults, modelRevenue, modelSponsorPerformance, modelViewerSeries } from './analytics-model';

const HOUR = 3_600_000;
const START = Date.UTC(2026, 10, 10, 8, 0, 0);
const SETTINGS = {
  theme: { primaryColor: '#000000' },
  featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true },
  localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR',
  allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1,
};

const BROADCASTS = [['b1', 1], ['b2', 1], ['b3', 2]] as const;

/**
 * The tenant's polls: two per broadcast, the second created three hours in, so that the votes
 * naming it before then (about a poll the service did not know yet) never count.
 */
function pollsOf(): PollDefinition[] {
  return BROADCASTS.flatMap(([broadcastId]) =>
    [0, 1].map((n) => ({
      id: `${broadcastId}-p${n}`,
      broadcastId,
      question: `Question of ${broadcastId}`,
      options: ['Option 0', 'Option 1', 'Option 2'],
      createdAtMs: n === 0 ? START - HOUR : START + 3 * HOUR,
    })),
  );
}

async function createPolls(storage: Pick<Storage, 'content'>, tenantSeq: number): Promise<void> {
  for (const poll of pollsOf()) {
    await storage.content.createOverlay({
      tenantSeq, broadcastId: poll.broadcastId, id: poll.id, type: 'poll', content: { type: 'poll', question: poll.question, options: [...poll.options] },
      active: true, createdAt: poll.createdAtMs, updatedAt: poll.createdAtMs, shownAt: poll.createdAtMs,
    });
  }
}

/** Draws from a seeded source, so that a failing seed can be replayed. */
function random(seed: number): { int(n: number): number; pick<T>(items: readonly T[]): T; chance(p: number): boolean } {
  const next = seededRandom(seed);
  return { int: (n) => Math.floor(next() * n), pick: (items) => items[Math.floor(next() * items.length)]!, chance: (p) => next() < p };
}

/**
 * Sessions over six hours of three broadcasts (two campaigns), with every kind of event the
 * panels read, votes cast twice, orders reported twice, steps skipped, sessions that straddle
 * hours. Every event has its own millisecond, so "first" is never a tie.
 */
function dataset(seed: number, tenantSeq: number): EventRow[] {
  const r = random(seed);
  const events: EventRow[] = [];
  const used = new Set<number>();
  let idCounter = 0;
  const broadcasts = BROADCASTS;
  for (let s = 0; s < 70; s++) {
    const [broadcastId, campaignId] = r.pick(broadcasts);
    const session = { sessionId: `svc_s${seed}_${s}`, broadcastId, campaignId, country: r.pick(['DE', 'FR', 'GB', null]), userId: r.chance(0.6) ? `u${r.int(12)}` : null };
    let t = START + r.int(6 * HOUR);
    const add = (event: string, data: Record<string, unknown> = {}, commerce: Partial<EventRow> = {}) => {
      t += 1 + r.int(r.chance(0.1) ? 40 * 60_000 : 90_000);
      while (used.has(t)) t++;
      used.add(t);
      idCounter++;
      events.push({
        tenantSeq, eventId: `0190a6a0-${seed.toString(16).padStart(4, '0')}-7000-8000-${idCounter.toString(16).padStart(12, '0')}`, event,
        userId: session.userId, sessionId: session.sessionId, broadcastId: session.broadcastId, campaignId: session.campaignId,
        timestampMs: t, receivedAtMs: t, country: session.country, orderId: null, sponsorId: null, total: null, items: null,
        data: JSON.stringify(data), ...commerce,
      });
    };
    if (r.chance(0.85)) add('broadcast.joined');
    for (let n = 3 + r.int(10); n > 0; n--) {
      const sponsor = r.pick(['acme', 'bolt', null]);
      const items = [{ productId: 'p', quantity: 1 + r.int(3), unitPrice: 9.99, currency: 'EUR' }];
      const total = items[0]!.quantity * 9.99;
      switch (r.int(9)) {
        case 0: {
          // Mostly votes as the gateway writes them; some forged (an option the poll lacks, another
          // label, a poll of another broadcast or none), as an HTTP sender can store them.
          const option = r.chance(0.1) ? 99 : r.int(3);
          const label = r.chance(0.1) ? 'Attacker label' : `Option ${option}`;
          const pollId = r.chance(0.1) ? `${r.pick(broadcasts)[0]}-p${r.int(3)}` : `${broadcastId}-p${r.int(2)}`;
          add('poll.voted', { pollId, questionText: `Question of ${broadcastId}`, optionSelected: label, optionIndex: option });
          break;
        }
        case 1: add(r.pick(['sponsor_moment.viewed', 'sponsor_moment.viewed', 'sponsor_moment.tapped']), { momentId: 'm', sponsorId: r.pick(['acme', 'bolt']) }); break;
        case 2: add(r.pick(['contest.entered', 'product.tapped', 'lineup.viewed'])); break;
        case 3: add('product.viewed', { productId: 'p' }, { sponsorId: sponsor, items: '[]', total: 0 }); break;
        case 4: add('cart.item_added', { productId: 'p' }, { sponsorId: sponsor, items: JSON.stringify(items), total }); break;
        case 5: add('checkout.started', {}, { sponsorId: sponsor, items: JSON.stringify(items), total }); break;
        case 6: {
          const orderId = `o${r.int(40)}`; // some orders are reported twice, even from two sessions
          add('checkout.completed', { currency: r.pick(['EUR', 'EUR', 'USD']) }, { sponsorId: sponsor, orderId, items: JSON.stringify(items), total });
          break;
        }
        default: add('poll.viewed', { pollId: `${broadcastId}-p0` });
      }
    }
    if (r.chance(0.7)) add('broadcast.left', { reason: 'closed' });
  }
  return events;
}

function filters(seed: number, tenantSeq: number): AnalyticsFilter[] {
  const r = random(seed * 7 + 1);
  const ranges: Array<[number | undefined, number | undefined]> = [
    [undefined, undefined],
    [START - HOUR, START + 12 * HOUR],
    [START + 2 * HOUR, START + 4 * HOUR], // whole hours only
    [START + HOUR + 1234, START + 5 * HOUR - 4321], // part-hours at both ends
    [START + 2 * HOUR + 100, START + 2 * HOUR + 50 * 60_000], // inside one hour
    [START + 3 * HOUR - 1, START + 3 * HOUR + 1], // across one hour boundary
    [START - HOUR / 2 + 5, START + 20 * HOUR + 123], // part-hours with no events outside the range
    [undefined, START + 3 * HOUR + 17],
    [START + 3 * HOUR + 17, undefined],
  ];
  for (let i = 0; i < 6; i++) {
    const from = START + r.int(7 * HOUR);
    ranges.push([from, from + r.int(4 * HOUR)]);
  }
  const narrowings: Array<Partial<AnalyticsFilter>> = [{}, { campaignId: 1 }, { broadcastId: 'b3' }, { country: 'DE' }, { sponsorId: 'acme' }, { broadcastId: 'b1', country: 'FR', sponsorId: 'bolt' }];
  return ranges.flatMap(([fromMs, toMs], i) => [narrowings[0], narrowings[1 + (i % (narrowings.length - 1))]].map((n) => ({ tenantSeq, fromMs, toMs, ...n })));
}

async function expectModel(storage: Storage, events: EventRow[], filter: AnalyticsFilter): Promise<void> {
  const label = JSON.stringify(filter);
  const a = storage.analytics;
  expect(await a.viewerSeries(filter, 15 * 60_000), label).toEqual(modelViewerSeries(events, filter, 15 * 60_000));
  expect(await a.engagement(filter), label).toEqual(modelEngagement(events, filter));
  expect(await a.pollResults(filter), label).toEqual(modelPollResults(events, filter, pollsOf()));
  expect(await a.sponsorPerformance(filter), label).toEqual(modelSponsorPerformance(events, filter));
  expect(await a.revenue(filter), label).toEqual(modelRevenue(events, filter));
  expect(await a.funnel(filter), label).toEqual(modelFunnel(events, filter));
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
