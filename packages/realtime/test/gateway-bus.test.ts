import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_GATEWAY_OPTIONS } from '../src';
import { BUS_KINDS, busesOf } from './gateway-buses';
import { API_KEY, pollRecord, startGateway, TENANT, type Harness } from './gateway-harness';

const THROTTLE_MS = 1_000;
const leftSessions = (h: Harness) =>
  h.ingested.filter((body) => (body as { event?: string }).event === 'broadcast.left').map((body) => (body as { sessionId: string }).sessionId);

describe.each(BUS_KINDS)('gateway on the bus (%s)', (kind) => {
  const buses = busesOf(kind);
  let h: Harness;
  afterEach(async () => {
    await h.close();
  });

  it('closes the sockets of an API key the bus announces as revoked, with 4401 invalid_api_key', async () => {
    h = await startGateway({}, [], [], await buses());
    const viewer = await h.join('svc_revoked');
    await h.announce('apiKey.revoked', { tenantSeq: TENANT.seq, keyId: 'ak_1', key: 'svc_pk_other' });
    await viewer.settle();
    await h.announce('apiKey.revoked', { tenantSeq: TENANT.seq, keyId: 'ak_2', key: API_KEY });
    expect(await viewer.closed).toEqual({ code: 4401, reason: 'invalid_api_key' });
  });

  it('counts in the live results the votes the bus announces as stored by another path', async () => {
    h = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1')], [], await buses());
    const watcher = await h.join('svc_watcher');
    const now = h.clock.now();
    const vote = (eventId: string, sessionId: string, broadcastId = 'b') => ({
      eventId,
      sessionId,
      userId: null,
      broadcastId,
      timestampMs: now,
      receivedAtMs: now,
      data: JSON.stringify({ pollId: 'poll-1', optionIndex: 1, optionSelected: 'No' }),
    });
    await h.announce('poll.voted', { tenantSeq: TENANT.seq, votes: [vote('e1', 'svc_http'), vote('e2', 'svc_elsewhere', 'other-broadcast')] });
    await watcher.next((m) => m.type === 'poll.results');
    expect(watcher.ofType('poll.results')).toEqual([{ type: 'poll.results', pollId: 'poll-1', counts: [0, 1], total: 1 }]);
  });

  it('records the entries the bus announces only for contests of the room, so that unknown ids take no room memory', async () => {
    const contest = { ...pollRecord('contest-1'), type: 'contest' as const, content: { type: 'contest' as const, title: 'Win' } };
    h = await startGateway({}, [pollRecord('poll-1'), contest], [], await buses());
    await h.join('svc_watcher');
    const entry = (eventId: string, contestId: string) => ({ eventId, sessionId: 'svc_entrant', userId: null, broadcastId: 'b', data: JSON.stringify({ contestId, title: 'x' }) });
    // Ids of no overlay, and of an overlay that is no contest, are left out.
    const entries = [entry('e0', 'contest-1'), entry('e1', 'poll-1'), ...Array.from({ length: 50 }, (_, i) => entry(`e${i + 2}`, `bogus_${i}`))];
    await h.announce('contest.entered', { tenantSeq: TENANT.seq, entries });
    const entrant = await h.join('svc_entrant');
    expect(entrant.ofType('welcome')[0]).toMatchObject({ viewer: { contests: ['contest-1'] } });
  });

  it('writes no broadcast.left for a session whose own broadcast.left the bus announces', async () => {
    h = await startGateway({}, [], [], await buses());
    const leaving = await h.join('svc_leaving');
    const vanishing = await h.join('svc_vanishing');
    await h.announce('session.left', { tenantSeq: TENANT.seq, sessionIds: ['svc_leaving'] });
    leaving.ws.close();
    vanishing.ws.close();
    await Promise.all([leaving.closed, vanishing.closed]);
    for (let i = 0; i < 100 && (await h.gateway.viewerCount(TENANT.seq, 'b')) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    h.timers.advance(DEFAULT_GATEWAY_OPTIONS.resumeGraceMs);
    expect(leftSessions(h)).toEqual(['svc_vanishing']);
  });

  it('provides its live viewer counts to the registry the dashboard reads, until it closes', async () => {
    h = await startGateway({}, [], [], await buses());
    await h.join('svc_one');
    await h.join('svc_two', 'b2');
    expect(await h.liveViewers.liveViewers(TENANT.seq, {})).toBe(2);
    expect(await h.liveViewers.liveViewers(TENANT.seq, { broadcastId: 'b2' })).toBe(1);
    expect(await h.liveViewers.liveViewers(TENANT.seq + 1, {})).toBe(0);
    expect([...(await h.liveViewers.liveViewersByBroadcast(TENANT.seq))].sort()).toEqual([['b', 1], ['b2', 1]]);
    await h.gateway.close();
    expect(await h.liveViewers.liveViewers(TENANT.seq, {})).toBe(0);
  });
});
