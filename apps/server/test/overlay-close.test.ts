import { uuidv7 } from 'uuidv7';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '@svc/protocol';
import { startTestApp, type TestApp } from './test-app';
import { ViewerPool, type Message } from './ws-client';

const REALTIME = { heartbeatIntervalMs: 150, resumeGraceMs: 300, throttleMs: 50 };
const OPTIONS = ['Team A', 'Team B', 'Draw'];
const MINUTE_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The real time moved by `offsetMs`: the service's clock, which a test moves past a closing time. */
class OffsetClock implements Clock {
  offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
}

/**
 * `closesAt` on polls and contests: refused in the past when set, and once passed, votes and
 * entries are refused live and quarantined when sent as events, so that no reader counts them.
 */
describe('polls and contests with closesAt', () => {
  let t: TestApp;
  let clock: OffsetClock;
  const viewers = new ViewerPool('closer');
  beforeEach(async () => {
    clock = new OffsetClock();
    t = await startTestApp({ listen: true, clock, config: { realtime: REALTIME } });
  });
  afterEach(async () => {
    viewers.terminateAll();
    await t.close();
  });

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  const at = (offsetMs: number) => new Date(clock.now() + offsetMs).toISOString();
  const welcomed = (contentId: string) => viewers.welcomed(t.url, t.demo.apiKey, contentId);
  const broadcast = (id: string) => t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id, campaignId: 1 } });
  const createOverlay = (broadcastId: string, body: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays`, headers: admin(), payload: body });
  const patchOverlay = (broadcastId: string, id: string, body: Record<string, unknown>) =>
    t.app.inject({ method: 'PATCH', url: `/v1/broadcasts/${broadcastId}/overlays/${id}`, headers: admin(), payload: body });
  const show = (broadcastId: string, id: string, action: 'show' | 'hide' = 'show') =>
    t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays/${id}/${action}`, headers: admin() });
  const shownPoll = async (broadcastId: string, closesAt: string) => {
    await broadcast(broadcastId);
    const created = await createOverlay(broadcastId, { type: 'poll', question: 'Who wins?', options: OPTIONS, closesAt });
    expect(created.statusCode, created.body).toBe(201);
    const pollId = created.json().id as string;
    await show(broadcastId, pollId);
    return pollId;
  };
  const vote = (broadcastId: string, sessionId: string, pollId: string, optionIndex: number) => ({
    event: 'poll.voted',
    eventId: uuidv7(),
    sessionId,
    broadcastId,
    timestamp: at(0),
    data: { pollId, questionText: 'Who wins?', optionSelected: OPTIONS[optionIndex], optionIndex },
  });
  const post = (events: unknown[]) =>
    t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey, 'content-type': 'application/json' }, payload: { events } });
  const storedEvents = (name: string) => t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq, events: [name] }, { limit: 10_000 });

  it('takes closesAt on create and update, returns it, and refuses one that is not in the future naming /closesAt', async () => {
    await broadcast('admin');
    const closesAt = at(10 * MINUTE_MS);
    const created = await createOverlay('admin', { type: 'poll', question: 'Who wins?', options: OPTIONS, closesAt });
    expect(created.statusCode, created.body).toBe(201);
    const pollId = created.json().id as string;
    expect(created.json()).toMatchObject({ closesAt });
    expect((await t.app.inject({ url: `/v1/broadcasts/admin/overlays/${pollId}`, headers: admin() })).json()).toMatchObject({ closesAt });

    // In the past, now, or a leap second (a date-time that never comes by the server's clock).
    for (const bad of [at(-1_000), at(0), '2030-06-30T23:59:60Z']) {
      const refused = await createOverlay('admin', { type: 'contest', title: 'Win a jersey', closesAt: bad });
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: '/closesAt' }] });
    }
    const notADate = await createOverlay('admin', { type: 'poll', question: 'Who wins?', options: OPTIONS, closesAt: 'tomorrow' });
    expect(notADate.statusCode).toBe(400);
    expect(notADate.json().errors).toMatchObject([{ path: '/closesAt' }]);

    const later = at(20 * MINUTE_MS);
    const moved = await patchOverlay('admin', pollId, { question: 'Who wins?', options: OPTIONS, closesAt: later });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json().closesAt).toBe(later);
    const past = await patchOverlay('admin', pollId, { question: 'Who wins?', options: OPTIONS, closesAt: at(-MINUTE_MS) });
    expect(past.statusCode).toBe(400);
    expect(past.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: '/closesAt' }] });

    // Every form the date-time format admits is stored in one form every browser reads.
    const halfAnHour = at(30 * MINUTE_MS);
    const canonical = await createOverlay('admin', { type: 'contest', title: 'Win a scarf', closesAt: halfAnHour.replace('T', ' ').toLowerCase() });
    expect(canonical.statusCode, canonical.body).toBe(201);
    expect(canonical.json().closesAt).toBe(halfAnHour);
    const timed = await createOverlay('admin', { type: 'lineup', items: [{ title: 'Kick-off', at: '2030-01-01t20:00:00+01:00' }] });
    expect(timed.json().items).toEqual([{ title: 'Kick-off', at: '2030-01-01T19:00:00.000Z' }]);

    // Once the stored closing time has passed, other fields may still change while it stays as it is.
    const contest = (await createOverlay('admin', { type: 'contest', title: 'Win a jersey', closesAt: at(MINUTE_MS) })).json();
    clock.offsetMs += 2 * MINUTE_MS;
    const retitled = await patchOverlay('admin', contest.id, { title: 'Win a signed jersey', closesAt: contest.closesAt });
    expect(retitled.statusCode, retitled.body).toBe(200);
    expect(retitled.json()).toMatchObject({ title: 'Win a signed jersey', closesAt: contest.closesAt });
  });

  it('lets a shown poll change its closesAt and pushes it, but never to a time in the past once it has votes (409)', async () => {
    const pollId = await shownPoll('extend', at(MINUTE_MS));
    const viewer = await welcomed('extend');
    expect((viewer.ofType('welcome')[0]!.overlays as Message[])[0]).toMatchObject({ id: pollId, closesAt: expect.any(String) });
    expect(await viewer.request({ type: 'poll.vote', pollId, optionIndex: 0 })).toMatchObject({ type: 'ack' });

    const later = at(5 * MINUTE_MS);
    const extended = await patchOverlay('extend', pollId, { question: 'Who wins?', options: OPTIONS, closesAt: later });
    expect(extended.statusCode, extended.body).toBe(200);
    expect((await viewer.next((m) => m.type === 'overlay.update')).overlay).toMatchObject({ id: pollId, closesAt: later });

    const voiding = await patchOverlay('extend', pollId, { question: 'Who wins?', options: OPTIONS, closesAt: at(-MINUTE_MS) });
    expect(voiding.statusCode).toBe(409);
    expect(voiding.json().code).toBe('conflict');
    // The question of a shown poll still cannot change.
    expect((await patchOverlay('extend', pollId, { question: 'Who really wins?', options: OPTIONS, closesAt: later })).statusCode).toBe(409);
  });

  it('refuses a vote and a contest entry received after closesAt with poll_closed and contest_closed; nothing is stored and results stay', async () => {
    const pollId = await shownPoll('closing', at(MINUTE_MS));
    const contest = (await createOverlay('closing', { type: 'contest', title: 'Win a jersey', closesAt: at(MINUTE_MS) })).json();
    await show('closing', contest.id);
    const early = await welcomed('closing');
    const late = await welcomed('closing');
    expect(await early.request({ type: 'poll.vote', pollId, optionIndex: 1 })).toMatchObject({ type: 'ack' });
    expect(await early.request({ type: 'contest.enter', contestId: contest.id })).toMatchObject({ type: 'ack' });
    await early.next((m) => m.type === 'poll.results' && m.total === 1);

    clock.offsetMs += MINUTE_MS;
    const refusedVote = await late.request({ type: 'poll.vote', pollId, optionIndex: 0 });
    expect(refusedVote).toMatchObject({ type: 'error', code: 'poll_closed', requestId: expect.any(String) });
    const refusedEntry = await late.request({ type: 'contest.enter', contestId: contest.id });
    expect(refusedEntry).toMatchObject({ type: 'error', code: 'contest_closed', requestId: expect.any(String) });

    await sleep(REALTIME.throttleMs * 4);
    expect(late.ofType('poll.results').every((m) => m.total === 1)).toBe(true);
    expect(await storedEvents('poll.voted')).toHaveLength(1);
    expect(await storedEvents('contest.entered')).toHaveLength(1);
    const newcomer = await welcomed('closing');
    expect(newcomer.ofType('welcome')[0]!.pollResults).toEqual([{ pollId, counts: [0, 1, 0], total: 1 }]);
  });

  it('checks a vote the service took in before the poll closed at that time, however late its write reaches ingest', async () => {
    const pollId = await shownPoll('taken-in-time', at(MINUTE_MS));
    const takenAtMs = clock.now();
    clock.offsetMs += MINUTE_MS + 1_000;
    const tenant = await t.services.tenants.getTenant('demo');
    const ingest = (event: Record<string, unknown>, receivedAtMs?: number) =>
      t.services.ingest.ingest({ tenant, source: 'client', country: null, body: event, bodyBytes: 0, ...(receivedAtMs === undefined ? {} : { receivedAtMs }) });
    // A vote the gateway took in a minute before, written only now (it waited behind another write): counted.
    const taken = vote('taken-in-time', 'svc_waited', pollId, 1);
    expect(await ingest({ ...taken, timestamp: new Date(takenAtMs).toISOString() }, takenAtMs)).toMatchObject({ accepted: 1, rejected: [] });
    // Without that time, a vote arriving now is late.
    const late = vote('taken-in-time', 'svc_late', pollId, 0);
    expect(await ingest(late)).toMatchObject({ accepted: 0, rejected: [{ code: 'poll_vote_invalid' }] });
    // A time given later than now changes nothing: the vote is checked now.
    expect(await ingest(vote('taken-in-time', 'svc_late2', pollId, 0), clock.now() + MINUTE_MS)).toMatchObject({ accepted: 0, rejected: [{ code: 'poll_vote_invalid' }] });
    const stored = await storedEvents('poll.voted');
    expect(stored.map((e) => e.eventId)).toEqual([taken.eventId]);
    expect(Date.parse(String(stored[0]!.receivedAt))).toBe(takenAtMs);
  });

  it('quarantines a vote sent over HTTP or in a track message after the poll closed; live, rebuilt and dashboard results never count it', async () => {
    const pollId = await shownPoll('late-events', at(MINUTE_MS));
    const watcher = await welcomed('late-events');
    expect((await post([vote('late-events', 'svc_intime', pollId, 2)])).json()).toMatchObject({ accepted: 1 });
    await watcher.next((m) => m.type === 'poll.results' && m.total === 1);

    clock.offsetMs += MINUTE_MS + 1_000;
    const overHttp = (await post([vote('late-events', 'svc_tooLate1', pollId, 0)])).json();
    expect(overHttp).toMatchObject({ accepted: 0, rejected: [{ code: 'poll_vote_invalid' }] });
    const { eventId, timestamp, data } = vote('late-events', 'unused', pollId, 0);
    const overWs = await watcher.request({ type: 'track', events: [{ event: 'poll.voted', eventId, timestamp, data }] });
    expect(overWs).toMatchObject({ type: 'ack', ids: [], rejected: [{ code: 'poll_vote_invalid' }] });
    const quarantine = (await t.app.inject({ url: '/v1/rejected-events', headers: admin() })).json().data as Array<{ code: string }>;
    expect(quarantine.filter((r) => r.code === 'poll_vote_invalid')).toHaveLength(2);
    expect(await storedEvents('poll.voted')).toHaveLength(1);

    await sleep(REALTIME.throttleMs * 4);
    expect(watcher.ofType('poll.results').every((m) => m.total === 1)).toBe(true);
    // The room read back from storage, and the dashboard, count the one vote in time.
    watcher.close();
    await sleep(REALTIME.resumeGraceMs + 300);
    for (let i = 0; i < 40 && (await t.app.gateway.viewerCount(t.demo.seq, 'late-events')) > 0; i++) await sleep(50);
    const rebuilt = await welcomed('late-events');
    expect(rebuilt.ofType('welcome')[0]!.pollResults).toEqual([{ pollId, counts: [0, 0, 1], total: 1 }]);
    const overview = await t.app.inject({ url: '/v1/analytics/overview?broadcastId=late-events', headers: admin() });
    expect(overview.json().polls).toMatchObject([{ pollId, totalVotes: 1 }]);
  });
});
