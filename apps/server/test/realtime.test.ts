import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer, type Message } from './ws-client';

const REALTIME = { heartbeatIntervalMs: 150, resumeGraceMs: 300, throttleMs: 50 };
/** Room for a busy machine when measuring how soon something happened. */
const SLACK_MS = 350;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Reads until `done` holds, or gives up after `timeoutMs` with the last value. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(25);
  }
}
const socketOf = (viewer: TestViewer) => (viewer.ws as unknown as { _socket: import('node:net').Socket })._socket;
const sessionOf = (viewer: TestViewer) => String((viewer.messages.find((m) => m.type === 'welcome')!.session as { id: string }).id);

describe('realtime gateway', () => {
  let t: TestApp;
  const viewers: TestViewer[] = [];
  beforeEach(async () => {
    t = await startTestApp({ listen: true, config: { realtime: REALTIME } });
  });
  afterEach(async () => {
    for (const viewer of viewers.splice(0)) viewer.ws.terminate();
    await t.close();
  });

  const admin = (token = t.demo.adminToken) => ({ authorization: `Bearer ${token}` });
  let sessionCounter = 0;
  const join = async (contentId: string, extra: Record<string, string> = {}, apiKey = t.demo.apiKey, headers: Record<string, string> = {}, localAddress?: string) => {
    const viewer = await TestViewer.connect(t.url, { apiKey, sessionId: `svc_test${++sessionCounter}`, contentId, ...extra }, headers, localAddress);
    viewers.push(viewer);
    return viewer;
  };
  const welcomed = async (contentId: string, extra: Record<string, string> = {}) => {
    const viewer = await join(contentId, extra);
    await viewer.next((m) => m.type === 'welcome');
    return viewer;
  };
  const createPoll = async (broadcastId: string, options = ['Team A', 'Team B', 'Draw']) => {
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id: broadcastId, campaignId: 1 } });
    const poll = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays`, headers: admin(), payload: { type: 'poll', question: 'Who wins?', options } });
    expect(poll.statusCode).toBe(201);
    return poll.json().id as string;
  };
  const show = (broadcastId: string, overlayId: string, action: 'show' | 'hide' = 'show') =>
    t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays/${overlayId}/${action}`, headers: admin() });
  const storedEvents = async (name: string) =>
    (await t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq, events: [name] }, { limit: 10_000 }));

  it('welcomes a viewer with the broadcast, its campaign, active overlays and the viewer count', async () => {
    await createPoll('match-1');
    const viewer = await join('match-1');
    const welcome = await viewer.next((m) => m.type === 'welcome');
    expect(viewer.ws.protocol).toBe('svc.v1');
    expect(welcome).toMatchObject({ protocol: 'svc.v1', broadcast: { id: 'match-1', campaignId: 1 }, overlays: [], viewers: 1, session: { resumed: false } });
    expect(Date.parse(String(welcome.serverTime))).not.toBeNaN();
  });

  it('pushes a shown poll to every viewer of that broadcast and to nobody else', async () => {
    const pollId = await createPoll('match-1');
    const audience = await Promise.all(Array.from({ length: 5 }, () => welcomed('match-1')));
    const elsewhere = await welcomed('match-2');
    const otherTenant = await join('match-1', {}, t.other.apiKey);
    await otherTenant.next((m) => m.type === 'welcome');
    expect((await show('match-1', pollId)).json()).toEqual({ id: pollId, active: true });
    for (const viewer of audience) {
      const shown = await viewer.next((m) => m.type === 'overlay.show');
      expect(shown.overlay).toMatchObject({ id: pollId, type: 'poll', question: 'Who wins?', options: ['Team A', 'Team B', 'Draw'], active: true });
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(elsewhere.ofType('overlay.show')).toEqual([]);
    expect(otherTenant.ofType('overlay.show')).toEqual([]);
  });

  it('counts 100 viewers\' votes exactly, refuses a second vote, and stops voting when hidden', async () => {
    const pollId = await createPoll('final');
    await show('final', pollId);
    const voters = await Promise.all(Array.from({ length: 100 }, () => welcomed('final')));
    const answers = await Promise.all(voters.map((viewer, i) => viewer.request({ type: 'poll.vote', pollId, optionIndex: i % 3 })));
    expect(answers.every((a) => a.type === 'ack')).toBe(true);
    const expected = [34, 33, 33];
    const watcher = voters[0]!;
    const results = await watcher.next((m) => m.type === 'poll.results' && m.total === 100);
    expect(results).toMatchObject({ pollId, counts: expected, total: 100 });

    const again = await voters[5]!.request({ type: 'poll.vote', pollId, optionIndex: 0 });
    expect(again).toMatchObject({ type: 'error', code: 'already_voted' });
    const votes = await storedEvents('poll.voted');
    expect(votes).toHaveLength(100);
    expect(votes[0]!.data).toMatchObject({ pollId, questionText: 'Who wins?' });

    // A viewer who joins later sees the poll and its results in the welcome.
    const late = await join('final');
    const welcome = await late.next((m) => m.type === 'welcome');
    expect((welcome.overlays as Message[]).map((o) => o.id)).toEqual([pollId]);
    expect(welcome.pollResults).toEqual([{ pollId, counts: expected, total: 100 }]);

    await show('final', pollId, 'hide');
    expect(await watcher.next((m) => m.type === 'overlay.hide')).toMatchObject({ overlayId: pollId });
    expect(await late.request({ type: 'poll.vote', pollId, optionIndex: 1 })).toMatchObject({ type: 'error', code: 'overlay_not_active' });
  }, 30_000);

  it('sends poll results at most once per throttle interval and only when they changed', async () => {
    const pollId = await createPoll('throttled');
    await show('throttled', pollId);
    const voters = await Promise.all(Array.from({ length: 20 }, () => welcomed('throttled')));
    const start = voters[0]!.ofType('poll.results').length;
    await Promise.all(voters.map((v) => v.request({ type: 'poll.vote', pollId, optionIndex: 0 })));
    await voters[0]!.next((m) => m.type === 'poll.results' && m.total === 20);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const sent = voters[0]!.ofType('poll.results').slice(start);
    // 20 votes within a few throttle intervals make far fewer than 20 updates, none repeated.
    expect(sent.length).toBeLessThan(10);
    const totals = sent.map((m) => m.total);
    expect(new Set(totals).size).toBe(totals.length);
  });

  it('lets a viewer enter a contest once', async () => {
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id: 'show', campaignId: 1 } });
    const contest = (await t.app.inject({ method: 'POST', url: '/v1/broadcasts/show/overlays', headers: admin(), payload: { type: 'contest', title: 'Win a jersey' } })).json();
    await show('show', contest.id);
    const viewer = await welcomed('show', { userId: 'fan-1' });
    expect(await viewer.request({ type: 'contest.enter', contestId: contest.id })).toMatchObject({ type: 'ack' });
    expect(await viewer.request({ type: 'contest.enter', contestId: contest.id })).toMatchObject({ type: 'error', code: 'already_entered' });
    // The same user on another session is the same viewer.
    const secondDevice = await welcomed('show', { userId: 'fan-1' });
    expect(await secondDevice.request({ type: 'contest.enter', contestId: contest.id })).toMatchObject({ type: 'error', code: 'already_entered' });
    expect(await storedEvents('contest.entered')).toHaveLength(1);
  });

  it('stores tracked events through the ingest pipeline and acknowledges them by id', async () => {
    const viewer = await welcomed('tracked', { userId: 'user-7' });
    const answer = await viewer.request({
      type: 'track',
      events: [
        { event: 'broadcast.joined', eventId: '0190a6a0-0000-7000-8000-00000000000a', timestamp: new Date().toISOString(), data: {} },
        { event: 'poll.viewed', timestamp: new Date().toISOString(), data: {} },
      ],
    });
    expect(answer).toMatchObject({ type: 'ack', ids: ['0190a6a0-0000-7000-8000-00000000000a'], rejected: [{ index: 1, code: 'missing_field' }] });
    const [joined] = await storedEvents('broadcast.joined');
    expect(joined).toMatchObject({ userId: 'user-7', broadcastId: 'tracked', sessionId: expect.stringMatching(/^svc_test/) });
  });

  it('counts viewers as they come and go, and writes one broadcast.left per vanished session', async () => {
    const connectedAt = Date.now();
    const audience = await Promise.all(Array.from({ length: 10 }, () => welcomed('live')));
    expect(await t.app.gateway.viewerCount(t.demo.seq, 'live')).toBe(10);
    expect(await audience[9]!.next((m) => m.type === 'viewers' && m.count === 10)).toBeTruthy();

    // Two leave properly (their own broadcast.left, then close), two close without it, three vanish.
    for (const viewer of audience.slice(0, 2)) {
      await viewer.request({ type: 'track', events: [{ event: 'broadcast.left', timestamp: new Date().toISOString(), data: { reason: 'closed', watchedMs: 10 } }] });
      viewer.close();
    }
    for (const viewer of audience.slice(2, 4)) viewer.close();
    for (const viewer of audience.slice(4, 7)) viewer.vanish();
    const goneAt = Date.now();
    await audience[9]!.next((m) => m.type === 'viewers' && m.count === 3);
    expect(await t.app.gateway.viewerCount(t.demo.seq, 'live')).toBe(3);

    // After the reconnect grace, the server writes the missing broadcast.left events.
    await new Promise((resolve) => setTimeout(resolve, REALTIME.resumeGraceMs + 300));
    const lefts = await storedEvents('broadcast.left');
    const bySession = new Map<string, string[]>();
    for (const e of lefts) bySession.set(e.sessionId, [...(bySession.get(e.sessionId) ?? []), String(e.data.reason)]);
    expect(lefts).toHaveLength(7);
    expect([...bySession.values()].every((reasons) => reasons.length === 1)).toBe(true);
    const reasons = lefts.map((e) => e.data.reason).sort();
    expect(reasons).toEqual(['closed', 'closed', 'closed', 'closed', 'disconnect', 'disconnect', 'disconnect']);
    // Watching time ends at the disconnection, not when the grace period runs out.
    for (const e of lefts) expect(Number(e.data.watchedMs)).toBeLessThanOrEqual(goneAt - connectedAt + 50);
  });

  it("writes no broadcast.left of its own when the viewer's arrives over HTTP (beacon)", async () => {
    const viewer = await welcomed('beacon');
    const sessionId = String((viewer.messages[0]!.session as { id: string }).id);
    viewer.vanish();
    await t.app.inject({
      method: 'POST',
      url: `/v1/events?apiKey=${t.demo.apiKey}`,
      headers: { 'content-type': 'text/plain' },
      payload: JSON.stringify({ event: 'broadcast.left', sessionId, broadcastId: 'beacon', timestamp: new Date().toISOString(), data: { reason: 'closed', watchedMs: 5 } }),
    });
    await new Promise((resolve) => setTimeout(resolve, REALTIME.resumeGraceMs + 300));
    expect((await storedEvents('broadcast.left')).map((e) => e.data.reason)).toEqual(['closed']);
  });

  it('holds the per-tenant connection limit under concurrent joins', async () => {
    await t.close();
    t = await startTestApp({ listen: true, config: { realtime: { ...REALTIME, maxConnectionsPerTenant: 3 } } });
    // Six viewers from six addresses: no one address may hold a whole tenant's limit.
    const crowd = await Promise.all(Array.from({ length: 6 }, (_, i) => join('crowded', {}, t.demo.apiKey, {}, `127.0.0.${i + 2}`)));
    const closed = await Promise.all(crowd.map((v) => Promise.race([v.closed, new Promise((resolve) => setTimeout(() => resolve(null), 1_000))])));
    expect(closed.filter((c) => c !== null)).toEqual(Array(3).fill({ code: 1013, reason: 'too_many_connections' }));
    expect(await t.app.gateway.viewerCount(t.demo.seq, 'crowded')).toBe(3);
  });

  it('closes the old room when a session moves to another broadcast', async () => {
    const params = { apiKey: t.demo.apiKey, sessionId: 'svc_mover', contentId: 'first' };
    const first = await TestViewer.connect(t.url, params);
    viewers.push(first);
    await first.next((m) => m.type === 'welcome');
    const second = await TestViewer.connect(t.url, { ...params, contentId: 'second' });
    viewers.push(second);
    await second.next((m) => m.type === 'welcome');
    expect(await first.closed).toEqual({ code: 1000, reason: 'session_ended' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect([t.app.gateway.hasRoom(t.demo.seq, 'first'), t.app.gateway.hasRoom(t.demo.seq, 'second')]).toEqual([false, true]);
  });

  it('drops vanished viewers from the count within two heartbeat intervals plus the throttle, and writes one broadcast.left for each', async () => {
    const heartbeatMs = 500;
    await t.close();
    t = await startTestApp({ listen: true, config: { realtime: { ...REALTIME, heartbeatIntervalMs: heartbeatMs } } });
    const joinStartedAt = Date.now();
    const watcher = await welcomed('vanishing');
    const reset = await welcomed('vanishing');
    const silent = [await welcomed('vanishing'), await welcomed('vanishing')];
    const welcomedAt = Date.now();
    await watcher.next((m) => m.type === 'viewers' && m.count === 4);

    // A connection reset, without any closing handshake: out of the count at once.
    let seen = watcher.messages.length;
    const resetAt = Date.now();
    socketOf(reset).resetAndDestroy();
    await watcher.next((m) => m.type === 'viewers' && m.count === 3, 5_000, seen);
    const resetSeenAt = Date.now();
    expect(resetSeenAt - resetAt).toBeLessThan(REALTIME.throttleMs + SLACK_MS);

    // Two viewers stop reading just after answering a heartbeat ping: the next ping goes
    // unanswered and the one after drops them, 2 intervals later; the count follows within
    // the throttle.
    seen = watcher.messages.length;
    const pausedAt = await Promise.all(
      silent.map(
        (viewer) =>
          new Promise<number>((resolve) =>
            viewer.ws.once('ping', () => {
              socketOf(viewer).pause();
              resolve(Date.now());
            }),
          ),
      ),
    );
    await watcher.next((m) => m.type === 'viewers' && m.count === 1, 5_000, seen);
    const droppedSeenAt = Date.now();
    const elapsed = droppedSeenAt - Math.min(...pausedAt);
    expect(elapsed).toBeGreaterThan(heartbeatMs);
    expect(elapsed).toBeLessThan(2 * heartbeatMs + REALTIME.throttleMs + SLACK_MS);
    expect(await t.app.gateway.viewerCount(t.demo.seq, 'vanishing')).toBe(1);

    // After the reconnect grace: one broadcast.left per vanished session, none for the watcher.
    const lefts = await until(() => storedEvents('broadcast.left'), (events) => events.length >= 3);
    await sleep(REALTIME.resumeGraceMs + 200);
    expect(await storedEvents('broadcast.left')).toHaveLength(3);
    const bySession = new Map(lefts.map((e) => [e.sessionId, e]));
    expect(bySession.size).toBe(3);
    expect(bySession.has(sessionOf(watcher))).toBe(false);
    const resetLeft = bySession.get(sessionOf(reset))!;
    expect(resetLeft.data.reason).toBe('disconnect');
    // Watching time runs from the connection to the moment the server saw it end.
    expect(Number(resetLeft.data.watchedMs)).toBeGreaterThanOrEqual(resetAt - welcomedAt);
    expect(Number(resetLeft.data.watchedMs)).toBeLessThanOrEqual(resetSeenAt - joinStartedAt);
    silent.forEach((viewer, i) => {
      const left = bySession.get(sessionOf(viewer))!;
      expect(left.data.reason).toBe('timeout');
      expect(Number(left.data.watchedMs)).toBeGreaterThanOrEqual(pausedAt[i]! - welcomedAt);
      expect(Number(left.data.watchedMs)).toBeLessThanOrEqual(droppedSeenAt - joinStartedAt);
    });
  });

  it('starts a new session when a viewer comes back after the grace period, with a broadcast.left for each stretch', async () => {
    const params = { apiKey: t.demo.apiKey, sessionId: 'svc_comeback', contentId: 'comeback' };
    const first = await TestViewer.connect(t.url, params);
    viewers.push(first);
    expect(await first.next((m) => m.type === 'welcome')).toMatchObject({ session: { id: 'svc_comeback', resumed: false } });
    const firstWelcomedAt = Date.now();
    first.vanish();
    const [firstLeft] = await until(() => storedEvents('broadcast.left'), (events) => events.length >= 1);
    expect(firstLeft).toMatchObject({ sessionId: 'svc_comeback', data: { reason: 'disconnect' } });

    const secondStartedAt = Date.now();
    const second = await TestViewer.connect(t.url, params);
    viewers.push(second);
    expect(await second.next((m) => m.type === 'welcome')).toMatchObject({ session: { id: 'svc_comeback', resumed: false }, viewers: 1 });
    const secondWelcomedAt = Date.now();
    await sleep(50);
    second.close();
    const secondClosedAt = Date.now();
    const lefts = await until(() => storedEvents('broadcast.left'), (events) => events.length >= 2);
    await sleep(REALTIME.resumeGraceMs + 100);
    expect(await storedEvents('broadcast.left')).toHaveLength(2);
    const secondLeft = lefts.find((e) => e.eventId !== firstLeft!.eventId)!;
    expect(secondLeft).toMatchObject({ sessionId: 'svc_comeback', data: { reason: 'closed' } });
    // The second stretch is watched from its own connection, not from the first one.
    expect(Number(secondLeft.data.watchedMs)).toBeGreaterThanOrEqual(secondClosedAt - secondWelcomedAt);
    expect(Number(secondLeft.data.watchedMs)).toBeLessThan(secondStartedAt - firstWelcomedAt);
  });

  it('resumes a session that reconnects within the grace period, and keeps one connection per session', async () => {
    const params = { apiKey: t.demo.apiKey, sessionId: 'svc_resume1', contentId: 'resume' };
    const first = await TestViewer.connect(t.url, params);
    viewers.push(first);
    await first.next((m) => m.type === 'welcome');
    const second = await TestViewer.connect(t.url, params);
    viewers.push(second);
    expect(await second.next((m) => m.type === 'welcome')).toMatchObject({ session: { id: 'svc_resume1', resumed: true }, viewers: 1 });
    expect(await first.closed).toEqual({ code: 4409, reason: 'replaced' });
    second.vanish();
    await new Promise((resolve) => setTimeout(resolve, REALTIME.resumeGraceMs / 3));
    const third = await TestViewer.connect(t.url, params);
    viewers.push(third);
    expect(await third.next((m) => m.type === 'welcome')).toMatchObject({ session: { resumed: true } });
    await new Promise((resolve) => setTimeout(resolve, REALTIME.resumeGraceMs + 200));
    expect(await storedEvents('broadcast.left')).toEqual([]);
    expect(await t.app.gateway.viewerCount(t.demo.seq, 'resume')).toBe(1);
  });

  it('answers bad messages clearly and keeps serving the others', async () => {
    const pollId = await createPoll('rough');
    const rough = await welcomed('rough');
    const calm = await welcomed('rough');
    rough.send('{not json');
    expect(await rough.next((m) => m.type === 'error')).toMatchObject({ code: 'invalid_message' });
    expect(await rough.request({ type: 'dance' })).toMatchObject({ type: 'error', code: 'unknown_message_type' });
    expect(await rough.request({ type: 'poll.vote', pollId: 'nope', optionIndex: 0 })).toMatchObject({ code: 'overlay_not_active' });
    await show('rough', pollId);
    expect(await rough.request({ type: 'poll.vote', pollId, optionIndex: 7 })).toMatchObject({ code: 'invalid_message' });
    expect(await rough.request({ type: 'track', events: 'many' })).toMatchObject({ code: 'invalid_message' });
    expect(await rough.request({ type: 'ping' })).toMatchObject({ type: 'pong' });

    rough.send(JSON.stringify({ type: 'ping', pad: 'x'.repeat(70 * 1024) }));
    expect((await rough.closed).code).toBe(1009);
    expect(await calm.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
  });

  it('drops, then disconnects, a client that floods messages', async () => {
    const flooder = await welcomed('flood');
    const calm = await welcomed('flood');
    for (let i = 0; i < 400; i++) flooder.send({ type: 'ping' });
    expect(await flooder.next((m) => m.type === 'error' && m.code === 'rate_limited')).toBeTruthy();
    expect(await flooder.closed).toEqual({ code: 4429, reason: 'rate_limited' });
    expect(await calm.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
  });

  it('closes with documented codes before any data for bad credentials and parameters', async () => {
    const cases: Array<[Record<string, string>, number, string]> = [
      [{ sessionId: 'svc_x', contentId: 'b' }, 4401, 'api_key_missing'],
      [{ apiKey: `svc_pk_${'N'.repeat(32)}`, sessionId: 'svc_x', contentId: 'b' }, 4401, 'invalid_api_key'],
      [{ apiKey: t.demo.apiKey, sessionId: 'no-prefix', contentId: 'b' }, 4400, 'invalid_session_id'],
      [{ apiKey: t.demo.apiKey, sessionId: 'svc_x' }, 4400, 'invalid_content_id'],
      [{ apiKey: t.demo.apiKey, sessionId: 'svc_x', contentId: 'b', userId: 'someone@example.com' }, 4400, 'invalid_user_id'],
    ];
    for (const [params, code, reason] of cases) {
      const viewer = await TestViewer.connect(t.url, params);
      viewers.push(viewer);
      expect(await viewer.closed).toEqual({ code, reason });
      expect(viewer.messages).toEqual([]);
    }
  });

  it('closes the open sockets of a revoked API key, and only those', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: admin(), payload: { name: 'web' } });
    expect(created.statusCode, created.body).toBe(201);
    const { id, key } = created.json() as { id: string; key: string };
    const doomed = await join('b', {}, key);
    await doomed.next((m) => m.type === 'welcome');
    const kept = await welcomed('b');
    const otherTenant = await join('b', {}, t.other.apiKey);
    await otherTenant.next((m) => m.type === 'welcome');
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${id}`, headers: admin() })).statusCode).toBeLessThan(300);
    expect(await doomed.closed).toEqual({ code: 4401, reason: 'invalid_api_key' });
    const again = await join('b', {}, key);
    expect(await again.closed).toEqual({ code: 4401, reason: 'invalid_api_key' });
    const still = await Promise.race([kept.closed, otherTenant.closed, new Promise((resolve) => setTimeout(() => resolve('open'), 300))]);
    expect(still).toBe('open');
  });

  it("refuses origins outside the tenant's allowed list", async () => {
    await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin(), payload: { allowedOrigins: ['https://shop.example'] } });
    const stranger = await join('b', {}, t.demo.apiKey, { origin: 'https://evil.example' });
    expect(await stranger.closed).toEqual({ code: 4403, reason: 'origin_not_allowed' });
    const friend = await join('b', {}, t.demo.apiKey, { origin: 'https://shop.example' });
    expect(await friend.next((m) => m.type === 'welcome')).toBeTruthy();
  });

  it("discovers an unknown content id under the tenant's default campaign, never another tenant's broadcast", async () => {
    await t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: admin(t.other.adminToken), payload: { id: 77, name: 'Other' } });
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(t.other.adminToken), payload: { id: 'shared-name', campaignId: 77 } });
    const viewer = await join('shared-name');
    expect(await viewer.next((m) => m.type === 'welcome')).toMatchObject({ broadcast: { id: 'shared-name', campaignId: 1 } });
    const registered = await t.app.inject({ url: '/v1/broadcasts/shared-name', headers: admin() });
    expect(registered.json()).toMatchObject({ id: 'shared-name', campaignId: 1 });
  });

  it('hides an overlay for every viewer of the broadcast, and a viewer who joins afterwards gets none', async () => {
    const pollId = await createPoll('hiding');
    await show('hiding', pollId);
    const audience = await Promise.all(Array.from({ length: 5 }, () => welcomed('hiding')));
    for (const viewer of audience) expect((viewer.ofType('welcome')[0]!.overlays as Message[]).map((o) => o.id)).toEqual([pollId]);
    const elsewhere = await welcomed('not-hiding');
    await show('hiding', pollId, 'hide');
    for (const viewer of audience) await viewer.next((m) => m.type === 'overlay.hide');
    await elsewhere.request({ type: 'ping' });
    for (const viewer of audience) expect(viewer.ofType('overlay.hide')).toEqual([{ type: 'overlay.hide', overlayId: pollId, hiddenAt: expect.any(String) }]);
    expect(elsewhere.ofType('overlay.hide')).toEqual([]);
    const late = await welcomed('hiding');
    expect(late.ofType('welcome')[0]).toMatchObject({ overlays: [], pollResults: [] });
  });

  it("keeps other tenants' viewers connecting while one tenant is at its connection limit", async () => {
    await t.close();
    t = await startTestApp({ listen: true, config: { realtime: { ...REALTIME, maxConnectionsPerTenant: 2 } } });
    // Each viewer from its own address: no one address may hold a whole tenant's limit.
    let host = 1;
    const from = (apiKey: string) => join('limited', {}, apiKey, {}, `127.0.0.${++host}`);
    const demo = [await from(t.demo.apiKey), await from(t.demo.apiKey)];
    for (const viewer of demo) await viewer.next((m) => m.type === 'welcome');
    const refused = await from(t.demo.apiKey);
    expect(await refused.closed).toEqual({ code: 1013, reason: 'too_many_connections' });
    // The other tenant has its own allowance, on a broadcast of the same name too.
    for (let i = 0; i < 2; i++) {
      const viewer = await from(t.other.apiKey);
      expect(await viewer.next((m) => m.type === 'welcome')).toMatchObject({ viewers: i + 1 });
    }
    expect((await (await from(t.other.apiKey)).closed).code).toBe(1013);
    // A slot freed by one of the first tenant's viewers can be taken again.
    const seen = demo[1]!.messages.length;
    demo[0]!.close();
    await demo[1]!.next((m) => m.type === 'viewers' && m.count === 1, 5_000, seen);
    expect(await (await from(t.demo.apiKey)).next((m) => m.type === 'welcome')).toMatchObject({ viewers: 2 });
  });

  it('sends viewers 1001 when the server shuts down', async () => {
    const viewer = await welcomed('bye');
    await t.close();
    expect((await viewer.closed).code).toBe(1001);
    t = await startTestApp();
  });
});
