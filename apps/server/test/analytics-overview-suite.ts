import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { MAX_CHART_BUCKETS } from '@svc/analytics';
import type { startTestApp, TestApp } from './test-app';
import { TestViewer } from './ws-client';
import { D10, D11, loadAnalyticsFixture, loadOtherTenantEvents } from './analytics-fixture';

/**
 * The overview's expectations on the hand-built fixture (analytics-fixture.ts), worked out by
 * hand: registered inside a `describe` once per storage backend, each with its own test app.
 */
export function analyticsOverviewTests(start: typeof startTestApp): void {
  let t: TestApp;
  let p1 = '';
  let otherP1 = '';
  const clock = new ManualClock(Date.UTC(2026, 10, 21));
  beforeAll(async () => {
    t = await start({ clock, listen: true });
    p1 = (await loadAnalyticsFixture(t.app, t.demo.adminToken)).pollId;
    // Every expectation on tenant demo below also holds with another tenant's events on the same broadcasts and days.
    otherP1 = (await loadOtherTenantEvents(t.app, t.other.adminToken)).pollId;
  });
  afterAll(() => t.close());

  const overview = async (query: string) => {
    const response = await t.app.inject({ url: `/v1/analytics/overview?${query}`, headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  };
  const BOTH_DAYS = 'from=2026-11-10&to=2026-11-11';

  it('computes every panel over the whole dataset', async () => {
    const o = await overview(BOTH_DAYS);
    // Sessions: S1 10:00–10:10, S2 10:00:30–10:08 share the 10:00 bucket (15 min for a 2-day range).
    expect(o.viewers).toMatchObject({ peak: 2, sessions: 4, uniqueViewers: 3, bucketMs: 15 * 60_000, live: 0 });
    expect(o.viewers.series.find((p: { at: string }) => p.at === `${D10}10:00:00.000Z`).concurrent).toBe(2);
    expect(o.viewers.series.find((p: { at: string }) => p.at === `${D10}23:45:00.000Z`).concurrent).toBe(1);
    // Joined: u1, u2, S3; engaged: u1 (vote, contest) and u2 (vote, tap); S3 only viewed.
    expect(o.engagement).toEqual({ rate: 0.6667, engagedViewers: 2, joinedViewers: 3 });
    // u1's second vote does not count.
    expect(o.polls).toEqual([
      {
        pollId: p1, broadcastId: 'b1', createdAt: '2026-11-21T00:00:00.000Z', question: 'Who wins?', totalVotes: 2,
        options: [{ optionIndex: 0, option: 'A', votes: 1, share: 0.5 }, { optionIndex: 1, option: 'B', votes: 1, share: 0.5 }],
      },
    ]);
    expect(o.sponsors).toEqual([
      { sponsorId: 'acme', broadcastId: 'b1', impressions: 1, taps: 1, tapRate: 1, conversion: 1, revenue: [{ currency: 'EUR', amount: 25 }] },
      { sponsorId: 'bolt', broadcastId: 'b2', impressions: 1, taps: 0, tapRate: 0, conversion: 1, revenue: [{ currency: 'USD', amount: 100 }] },
    ]);
    // o1 reported twice counts once: EUR 20 + 5 over 2 orders of 2 and 1 items.
    expect(o.revenue).toEqual([
      { currency: 'EUR', gross: 25, orders: 2, averageOrderValue: 12.5, itemsPerOrder: 1.5 },
      { currency: 'USD', gross: 100, orders: 1, averageOrderValue: 100, itemsPerOrder: 3 },
    ]);
    // S2 skips the cart: it stops after the first step. S3 bought without viewing a product.
    expect(o.funnel).toEqual([
      { step: 'product.viewed', sessions: 2, conversion: 1 },
      { step: 'cart.item_added', sessions: 1, conversion: 0.5 },
      { step: 'checkout.started', sessions: 1, conversion: 1 },
      { step: 'checkout.completed', sessions: 1, conversion: 1 },
    ]);
    expect(o.ignoresSponsor).toEqual(['viewers', 'engagement', 'polls', 'contests']);
  });

  it('narrows by country', async () => {
    const o = await overview(`${BOTH_DAYS}&country=de`);
    expect(o.viewers).toMatchObject({ sessions: 3, uniqueViewers: 2 });
    expect(o.engagement).toEqual({ rate: 0.5, engagedViewers: 1, joinedViewers: 2 });
    expect(o.polls[0].options).toEqual([{ optionIndex: 0, option: 'A', votes: 1, share: 1 }, { optionIndex: 1, option: 'B', votes: 0, share: 0 }]);
    expect(o.revenue.map((r: { currency: string; gross: number }) => [r.currency, r.gross])).toEqual([['EUR', 20], ['USD', 100]]);
    expect(o.funnel.map((s: { sessions: number }) => s.sessions)).toEqual([1, 1, 1, 1]);
    expect(o.sponsors[0]).toMatchObject({ sponsorId: 'acme', impressions: 0, conversion: 0, revenue: [{ currency: 'EUR', amount: 20 }] });
  });

  it('narrows by broadcast and by campaign alike', async () => {
    for (const query of ['broadcastId=b2', 'campaignId=2']) {
      const o = await overview(`${BOTH_DAYS}&${query}`);
      expect(o.viewers, query).toMatchObject({ sessions: 2, uniqueViewers: 2 });
      expect(o.engagement, query).toEqual({ rate: 0.5, engagedViewers: 1, joinedViewers: 2 });
      expect(o.polls, query).toEqual([]);
      expect(o.revenue, query).toEqual([{ currency: 'USD', gross: 100, orders: 1, averageOrderValue: 100, itemsPerOrder: 3 }]);
      expect(o.sponsors.map((s: { sponsorId: string }) => s.sponsorId), query).toEqual(['bolt']);
      expect(o.funnel.map((s: { sessions: number }) => s.sessions), query).toEqual([0, 0, 0, 0]);
    }
  });

  it('cuts at UTC day boundaries', async () => {
    const nov11 = await overview('from=2026-11-11&to=2026-11-11');
    // S3 joined before midnight: on Nov 11 only u1 (S4) joined.
    expect(nov11.viewers).toMatchObject({ sessions: 2, uniqueViewers: 1 });
    expect(nov11.engagement).toEqual({ rate: 1, engagedViewers: 1, joinedViewers: 1 });
    expect(nov11.revenue.map((r: { currency: string }) => r.currency)).toEqual(['USD']);
    const nov10 = await overview('from=2026-11-10&to=2026-11-10');
    expect(nov10.viewers).toMatchObject({ sessions: 3, uniqueViewers: 3 });
    expect(nov10.revenue.map((r: { currency: string; gross: number }) => [r.currency, r.gross])).toEqual([['EUR', 25]]);
    expect(nov10.viewers.bucketMs).toBe(15 * 60_000);
  });

  it("cuts days, buckets and the range at the tenant's time zone, validated as an IANA name", async () => {
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    const patch = (timeZone: string) => t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin, payload: { timeZone } });
    expect((await t.app.inject({ url: '/v1/settings', headers: admin })).json().timeZone).toBe('UTC');
    const bad = await patch('Mars/Olympus');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: '/timeZone' }] });
    expect((await patch('America/New_York')).json().timeZone).toBe('America/New_York');
    try {
      // Nov 10 in New York is 05:00Z to 05:00Z: S3 and its USD order (just after midnight UTC) fall on it, S4 does not.
      const o = await overview('from=2026-11-10&to=2026-11-10');
      expect(o.timeZone).toBe('America/New_York');
      expect(o.range).toEqual({ from: '2026-11-10T05:00:00.000Z', to: '2026-11-11T05:00:00.000Z' });
      expect(o.viewers).toMatchObject({ sessions: 3, uniqueViewers: 3, peak: 2, bucketMs: 15 * 60_000 });
      expect(o.viewers.series[0].at).toBe('2026-11-10T05:00:00.000Z');
      expect(o.viewers.series.at(-1).at).toBe('2026-11-11T04:45:00.000Z');
      expect(o.revenue.map((r: { currency: string; gross: number }) => [r.currency, r.gross])).toEqual([['EUR', 25], ['USD', 100]]);
    } finally {
      expect((await patch('UTC')).statusCode).toBe(200);
    }
  });

  it('gives the peak as the highest per-minute count, the same for every bucket size', async () => {
    // S1 10:00–10:10 and S2 10:00:30–10:08 overlap: 2 in a minute, whether the chart shows minutes, hours or days.
    for (const query of ['from=2026-11-10T09:00:00Z&to=2026-11-10T12:00:00Z', 'from=2026-11-10&to=2026-11-12', 'from=2026-11-01&to=2026-11-20']) {
      const o = await overview(query);
      expect(o.viewers.peak, query).toBe(2);
      expect(Math.max(...o.viewers.series.map((p: { concurrent: number }) => p.concurrent)), query).toBe(2);
    }
    const minutes = await overview('from=2026-11-10T09:00:00Z&to=2026-11-10T12:00:00Z');
    expect(minutes.viewers.bucketMs).toBe(60_000);
    expect(minutes.viewers.series).toHaveLength(180);
  });

  it('answers a range from the far past with a bounded chart, fast', async () => {
    const started = performance.now();
    const response = await t.app.inject({ url: '/v1/analytics/overview?from=0202-01-01', headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    const elapsedMs = performance.now() - started;
    expect(response.statusCode, response.body).toBe(200);
    const o = response.json();
    // The axis still runs to now, the peak is still the per-minute maximum, and nothing is lost from the totals.
    expect(o.range.from).toBe('0202-01-01T00:00:00.000Z');
    expect(o.viewers).toMatchObject({ peak: 2, sessions: 4, uniqueViewers: 3 });
    expect(o.viewers.series.length).toBeLessThanOrEqual(MAX_CHART_BUCKETS + 1);
    expect(Math.max(...o.viewers.series.map((p: { concurrent: number }) => p.concurrent))).toBe(2);
    expect(Date.parse(o.viewers.series.at(-1).at)).toBeGreaterThan(clock.now() - o.viewers.bucketMs - 1);
    for (const c of o.revenueOverTime) expect(c.points).toHaveLength(o.viewers.series.length);
    expect(o.revenueOverTime.map((c: { points: Array<{ gross: number }> }) => c.points.reduce((sum, p) => sum + p.gross, 0))).toEqual([25, 100]);
    expect(response.body.length).toBeLessThan(100_000);
    expect(elapsedMs).toBeLessThan(3_000);
  });

  it('compares the headline numbers with the period just before, with the same filters', async () => {
    const o = await overview('from=2026-11-11&to=2026-11-11');
    expect(o.previous.range).toEqual({ from: '2026-11-10T00:00:00.000Z', to: '2026-11-11T00:00:00.000Z' });
    // Nov 10: S1, S2 and S3 (u1, u2, anonymous), S1 and S2 overlapping; EUR 25 over two orders.
    expect(o.previous.viewers).toEqual({ peak: 2, uniqueViewers: 3, sessions: 3 });
    expect(o.previous.engagement).toEqual({ rate: 0.6667, engagedViewers: 2, joinedViewers: 3 });
    expect(o.previous.revenue).toEqual([{ currency: 'EUR', gross: 25, orders: 2, averageOrderValue: 12.5, itemsPerOrder: 1.5 }]);
    const b2 = await overview('from=2026-11-11&to=2026-11-11&broadcastId=b2');
    expect(b2.previous.viewers).toEqual({ peak: 1, uniqueViewers: 1, sessions: 1 });
    expect(b2.previous.revenue).toEqual([]);
  });

  it('counts entries per contest and revenue over time, in the buckets of the viewer chart', async () => {
    const o = await overview(BOTH_DAYS);
    expect(o.contests).toEqual([{ contestId: 'c1', entries: 1, entrants: 1 }]);
    const eur = o.revenueOverTime.find((c: { currency: string }) => c.currency === 'EUR');
    const usd = o.revenueOverTime.find((c: { currency: string }) => c.currency === 'USD');
    expect(eur.points).toHaveLength(o.viewers.series.length);
    // o1 (reported twice) and o2 at 10:06; o3 in USD at 00:01 the next day.
    expect(eur.points.filter((p: { gross: number }) => p.gross > 0)).toEqual([{ at: `${D10}10:00:00.000Z`, gross: 25, orders: 2 }]);
    expect(usd.points.filter((p: { gross: number }) => p.gross > 0)).toEqual([{ at: `${D11}00:00:00.000Z`, gross: 100, orders: 1 }]);
    expect((await overview(`${BOTH_DAYS}&broadcastId=b1`)).contests).toEqual([]);
  });

  it("lists the countries of the range's events as the country filter's choices, whatever country is chosen", async () => {
    expect((await overview(BOTH_DAYS)).countries).toEqual(['DE', 'FR']);
    expect((await overview(`${BOTH_DAYS}&country=FR`)).countries).toEqual(['DE', 'FR']);
    expect((await overview(`${BOTH_DAYS}&broadcastId=b2`)).countries).toEqual(['DE']);
  });

  it('narrows sponsor performance, revenue and funnel by sponsor, and nothing else', async () => {
    const all = await overview(BOTH_DAYS);
    const acme = await overview(`${BOTH_DAYS}&sponsorId=acme`);
    expect(acme.sponsors.map((s: { sponsorId: string }) => s.sponsorId)).toEqual(['acme']);
    expect(acme.revenue).toEqual([{ currency: 'EUR', gross: 25, orders: 2, averageOrderValue: 12.5, itemsPerOrder: 1.5 }]);
    expect(acme.funnel.map((s: { sessions: number }) => s.sessions)).toEqual([2, 1, 1, 1]);
    expect(acme.viewers).toEqual(all.viewers);
    expect(acme.engagement).toEqual(all.engagement);
    expect(acme.polls).toEqual(all.polls);
    const bolt = await overview(`${BOTH_DAYS}&sponsorId=bolt`);
    expect(bolt.revenue.map((r: { currency: string }) => r.currency)).toEqual(['USD']);
    expect(bolt.funnel.map((s: { sessions: number }) => s.sessions)).toEqual([0, 0, 0, 0]);
  });

  it("lists a poll overlay's options that nobody chose, with no votes", async () => {
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin, payload: { id: 'b3', campaignId: 1 } });
    const created = await t.app.inject({ method: 'POST', url: '/v1/broadcasts/b3/overlays', headers: admin, payload: { type: 'poll', question: 'Best goal?', options: ['First', 'Second', 'Third'] } });
    expect(created.statusCode, created.body).toBe(201);
    const pollId = created.json().id as string;
    const vote = (session: string, optionIndex: number) => ({
      event: 'poll.voted', timestamp: `${D11}12:00:0${optionIndex}Z`, sessionId: session, broadcastId: 'b3', userId: null,
      data: { pollId, questionText: 'Best goal?', optionSelected: ['First', 'Second', 'Third'][optionIndex], optionIndex },
    });
    const sent = await t.app.inject({ method: 'POST', url: '/v1/events', headers: admin, payload: { events: [vote('svc_v1', 1), vote('svc_v2', 1)] } });
    expect(sent.json().accepted, sent.body).toBe(2);
    const o = await overview(`${BOTH_DAYS}&broadcastId=b3`);
    expect(o.polls).toEqual([
      {
        pollId, broadcastId: 'b3', createdAt: expect.any(String), question: 'Best goal?', totalVotes: 2,
        options: [
          { optionIndex: 0, option: 'First', votes: 0, share: 0 },
          { optionIndex: 1, option: 'Second', votes: 2, share: 1 },
          { optionIndex: 2, option: 'Third', votes: 0, share: 0 },
        ],
      },
    ]);
  });

  it('lists polls newest first, with shares that add up to 100%', async () => {
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    clock.advance(60_000);
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin, payload: { id: 'b4', campaignId: 1 } });
    const created = await t.app.inject({ method: 'POST', url: '/v1/broadcasts/b4/overlays', headers: admin, payload: { type: 'poll', question: 'Man of the match?', options: ['X', 'Y', 'Z'] } });
    expect(created.statusCode, created.body).toBe(201);
    const pollId = created.json().id as string;
    clock.advance(1_000);
    // 4, 8 and 9 of 21 votes: 19.05%, 38.10% and 42.86% rounded on their own add up to 100.1%.
    const events = [...Array(21).keys()].map((i) => {
      const optionIndex = i < 4 ? 0 : i < 12 ? 1 : 2;
      return {
        event: 'poll.voted', timestamp: `${D11}12:30:00Z`, sessionId: `svc_mm${i}`, broadcastId: 'b4', userId: null,
        data: { pollId, questionText: 'Man of the match?', optionSelected: ['X', 'Y', 'Z'][optionIndex], optionIndex },
      };
    });
    const sent = await t.app.inject({ method: 'POST', url: '/v1/events', headers: admin, payload: { events } });
    expect(sent.json().accepted, sent.body).toBe(21);
    const o = await overview(BOTH_DAYS);
    expect(o.polls[0]).toMatchObject({ pollId, broadcastId: 'b4', createdAt: new Date(clock.now() - 1_000).toISOString(), totalVotes: 21 });
    expect(o.polls[0].options.map((x: { share: number }) => x.share)).toEqual([0.19, 0.381, 0.429]);
    expect(o.polls.map((poll: { pollId: string }) => poll.pollId)).toContain(p1);
    // Creation time descending, then id ascending (polls created in the same millisecond).
    const keys = o.polls.map((poll: { createdAt: string; pollId: string }) => [poll.createdAt, poll.pollId]);
    expect(keys).toEqual([...keys].sort((a, b) => (a[0] !== b[0] ? (a[0] < b[0] ? 1 : -1) : a[1] < b[1] ? -1 : 1)));
  });

  it('counts live viewers of the matching broadcasts', async () => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_live1', contentId: 'b1' });
    await viewer.next((m) => m.type === 'welcome');
    // Another tenant's viewer of a broadcast with the same id counts for that tenant only.
    const others = await Promise.all(['svc_live1', 'svc_live2'].map((sessionId) => TestViewer.connect(t.url, { apiKey: t.other.apiKey, sessionId, contentId: 'b1' })));
    await Promise.all(others.map((v) => v.next((m) => m.type === 'welcome')));
    expect((await overview('broadcastId=b1')).viewers.live).toBe(1);
    expect((await overview('broadcastId=b2')).viewers.live).toBe(0);
    expect((await overview('')).viewers.live).toBe(1);
    const otherOverview = await t.app.inject({ url: '/v1/analytics/overview?broadcastId=b1', headers: { authorization: `Bearer ${t.other.adminToken}` } });
    expect(otherOverview.json().viewers.live).toBe(2);
    for (const v of [viewer, ...others]) v.ws.terminate();
  });

  it('names a bad filter and refuses unknown ones', async () => {
    const headers = { authorization: `Bearer ${t.demo.adminToken}` };
    const bad = await t.app.inject({ url: '/v1/analytics/overview?from=2026-13-01', headers });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].path).toBe('/query/from');
    const unknown = await t.app.inject({ url: '/v1/analytics/overview?colour=red', headers });
    expect(unknown.statusCode).toBe(400);
  });

  it('refuses an inverted or empty range with a code of its own', async () => {
    const headers = { authorization: `Bearer ${t.demo.adminToken}` };
    for (const query of ['from=2026-11-20&to=2026-11-10', 'from=2026-11-10T12:00:00Z&to=2026-11-10T12:00:00Z']) {
      const response = await t.app.inject({ url: `/v1/analytics/overview?${query}`, headers });
      expect(response.statusCode, query).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json(), query).toMatchObject({ code: 'invalid_range', errors: [{ path: '/query/to', code: 'invalid_range' }] });
    }
  });

  it('refuses a start after now without an end (the range would run backwards to now), on the overview and live alike', async () => {
    const headers = { authorization: `Bearer ${t.demo.adminToken}` };
    const tomorrow = new Date(clock.now() + 86_400_000).toISOString().slice(0, 10);
    for (const url of [`/v1/analytics/overview?from=${tomorrow}`, `/v1/analytics/live?from=${tomorrow}`, `/v1/analytics/overview?from=${new Date(clock.now()).toISOString()}`]) {
      const response = await t.app.inject({ url, headers });
      expect(response.statusCode, url).toBe(400);
      expect(response.headers['content-type'], url).toContain('application/problem+json');
      expect(response.json(), url).toMatchObject({ code: 'invalid_range', errors: [{ path: '/query/from', code: 'invalid_range' }] });
    }
    // With an end, a range in the future is a range like any other (nothing in it yet).
    const ahead = await overview(`from=${tomorrow}&to=${tomorrow}`);
    expect(ahead.viewers).toMatchObject({ sessions: 0, series: [] });
  });

  it("shows a tenant only its own events, even where ids are the same as another tenant's", async () => {
    const response = await t.app.inject({ url: `/v1/analytics/overview?${BOTH_DAYS}`, headers: { authorization: `Bearer ${t.other.adminToken}` } });
    expect(response.statusCode, response.body).toBe(200);
    const o = response.json();
    // svc_s1 (u1) and svc_o2 (anonymous); demo's four sessions are not there.
    expect(o.viewers).toMatchObject({ sessions: 2, uniqueViewers: 2 });
    expect(o.engagement).toEqual({ rate: 0.5, engagedViewers: 1, joinedViewers: 2 });
    expect(o.polls).toEqual([
      {
        pollId: otherP1, broadcastId: 'b1', createdAt: '2026-11-21T00:00:00.000Z', question: 'Who wins?', totalVotes: 1,
        options: [{ optionIndex: 0, option: 'A', votes: 0, share: 0 }, { optionIndex: 1, option: 'B', votes: 1, share: 1 }],
      },
    ]);
    expect(o.revenue).toEqual([{ currency: 'EUR', gross: 999, orders: 1, averageOrderValue: 999, itemsPerOrder: 1 }]);
    expect(o.sponsors).toEqual([
      { sponsorId: 'acme', broadcastId: 'b1', impressions: 1, taps: 0, tapRate: 0, conversion: 1, revenue: [{ currency: 'EUR', amount: 999 }] },
    ]);
  });
}
