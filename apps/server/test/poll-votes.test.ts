import { uuidv7 } from 'uuidv7';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer, type Message } from './ws-client';

const REALTIME = { heartbeatIntervalMs: 150, resumeGraceMs: 300, throttleMs: 50 };
const OPTIONS = ['Team A', 'Team B', 'Draw'];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Forged poll votes: a vote counts by one rule (docs/analytics.md, "Poll votes") in live
 * results, in a room rebuilt from storage and on the dashboard, whichever way it was sent.
 */
describe('poll votes', () => {
  let t: TestApp;
  const viewers: TestViewer[] = [];
  beforeEach(async () => {
    t = await startTestApp({ listen: true, config: { realtime: REALTIME } });
  });
  afterEach(async () => {
    for (const viewer of viewers.splice(0)) viewer.ws.terminate();
    await t.close();
  });

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  let sessions = 0;
  const connect = async (params: Record<string, string>) => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, ...params });
    viewers.push(viewer);
    await viewer.next((m) => m.type === 'welcome');
    return viewer;
  };
  const welcomed = (contentId: string, extra: Record<string, string> = {}) => connect({ sessionId: `svc_voter${++sessions}`, contentId, ...extra });
  const welcomeOf = (viewer: TestViewer) => viewer.messages.find((m) => m.type === 'welcome')!;
  const shownPoll = async (broadcastId: string) => {
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id: broadcastId, campaignId: 1 } });
    const poll = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays`, headers: admin(), payload: { type: 'poll', question: 'Who wins?', options: OPTIONS } });
    const pollId = poll.json().id as string;
    await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays/${pollId}/show`, headers: admin() });
    return pollId;
  };
  const post = (events: unknown[]) =>
    t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey, 'content-type': 'application/json' }, payload: { events } });
  const vote = (broadcastId: string, sessionId: string, data: Record<string, unknown>, userId?: string) => ({
    event: 'poll.voted',
    eventId: uuidv7(),
    sessionId,
    broadcastId,
    ...(userId ? { userId } : {}),
    timestamp: new Date().toISOString(),
    data: { questionText: 'Who wins?', ...data },
  });
  const storedVotes = () => t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq, events: ['poll.voted'] }, { limit: 10_000 });
  const dashboardPolls = async (broadcastId: string) => {
    const response = await t.app.inject({ url: `/v1/analytics/overview?broadcastId=${broadcastId}`, headers: admin() });
    expect(response.statusCode).toBe(200);
    return response.json().polls as Array<{ pollId: string; totalVotes: number; options: Array<{ optionIndex: number; option: string; votes: number }> }>;
  };
  /** Lets every viewer of the broadcast go and their sessions end, so that the next viewer's room is read back from storage. */
  const rebuiltWelcome = async (broadcastId: string, present: TestViewer[]) => {
    for (const viewer of present) viewer.close();
    await sleep(REALTIME.resumeGraceMs + 300);
    for (let i = 0; i < 40 && (await t.app.gateway.viewerCount(t.demo.seq, broadcastId)) > 0; i++) await sleep(50);
    return welcomeOf(await welcomed(broadcastId));
  };
  const expectOwnOptions = (polls: Awaited<ReturnType<typeof dashboardPolls>>, pollId: string, votes: number[]) => {
    expect(polls).toEqual([expect.objectContaining({ pollId, question: 'Who wins?', totalVotes: votes.reduce((a, b) => a + b, 0) })]);
    expect(polls[0]!.options.map(({ optionIndex, option, votes: n }) => ({ optionIndex, option, votes: n }))).toEqual(
      OPTIONS.map((option, optionIndex) => ({ optionIndex, option, votes: votes[optionIndex] })),
    );
  };

  it('quarantines 20 forged votes with optionIndex 99 sent over HTTP; the rebuilt welcome and the dashboard keep the poll\'s 3 options and counts', async () => {
    const pollId = await shownPoll('forged-http');
    const voter = await welcomed('forged-http');
    expect(await voter.request({ type: 'poll.vote', pollId, optionIndex: 1 })).toMatchObject({ type: 'ack' });

    const forged = Array.from({ length: 20 }, (_, i) => vote('forged-http', `svc_forger${i}`, { pollId, optionSelected: 'Attacker wins', optionIndex: 99 }));
    const answer = (await post(forged)).json();
    expect(answer.accepted).toBe(0);
    expect(answer.rejected).toHaveLength(20);
    expect(new Set(answer.rejected.map((r: { code: string }) => r.code))).toEqual(new Set(['poll_vote_invalid']));
    const quarantine = (await t.app.inject({ url: '/v1/rejected-events', headers: admin() })).json().data as Array<{ code: string }>;
    expect(quarantine.filter((r) => r.code === 'poll_vote_invalid')).toHaveLength(20);
    // A real option under another label is just as forged.
    expect((await post([vote('forged-http', 'svc_forger99', { pollId, optionSelected: 'Attacker wins', optionIndex: 0 })])).json().rejected).toMatchObject([{ code: 'poll_vote_invalid' }]);
    expect(await storedVotes()).toHaveLength(1);

    const welcome = await rebuiltWelcome('forged-http', [voter]);
    expect(welcome.pollResults).toEqual([{ pollId, counts: [0, 1, 0], total: 1 }]);
    const polls = await dashboardPolls('forged-http');
    expectOwnOptions(polls, pollId, [0, 1, 0]);
    expect(JSON.stringify(polls)).not.toContain('Attacker');
  });

  it('never counts forged votes already in storage (written by an earlier version), in a rebuilt room or on the dashboard', async () => {
    const pollId = await shownPoll('legacy');
    const voter = await welcomed('legacy');
    expect(await voter.request({ type: 'poll.vote', pollId, optionIndex: 0 })).toMatchObject({ type: 'ack' });
    const now = Date.now();
    const forged = Array.from({ length: 20 }, (_, i) => ({
      tenantSeq: t.demo.seq, eventId: uuidv7(), event: 'poll.voted', userId: null, sessionId: `svc_old${i}`, broadcastId: 'legacy', campaignId: 1,
      timestampMs: now, receivedAtMs: now, country: null, orderId: null, sponsorId: null, total: null, items: null,
      data: JSON.stringify({ pollId, questionText: 'Who wins?', optionSelected: i % 2 ? 'Attacker wins' : 'Team B', optionIndex: i % 2 ? 99 : 0 }),
    }));
    await t.services.storage.events.commit({ events: forged, rejects: [] });
    const welcome = await rebuiltWelcome('legacy', [voter]);
    expect(welcome.pollResults).toEqual([{ pollId, counts: [1, 0, 0], total: 1 }]);
    expectOwnOptions(await dashboardPolls('legacy'), pollId, [1, 0, 0]);
  });

  it('answers 20 forged votes in a track message with poll_vote_invalid; the rebuilt welcome and the dashboard are unchanged', async () => {
    const pollId = await shownPoll('forged-ws');
    const voter = await welcomed('forged-ws');
    expect(await voter.request({ type: 'poll.vote', pollId, optionIndex: 2 })).toMatchObject({ type: 'ack' });
    const forger = await welcomed('forged-ws');
    const events = Array.from({ length: 20 }, (_, i) => {
      const { eventId, timestamp, data } = vote('forged-ws', 'unused', { pollId, optionSelected: 'Attacker wins', optionIndex: 99 });
      return { event: 'poll.voted', eventId, timestamp, userId: `forger-${i}`, data };
    });
    const ack = await forger.request({ type: 'track', events });
    expect(ack).toMatchObject({ type: 'ack', ids: [] });
    expect((ack.rejected as Message[]).map((r) => r.code)).toEqual(Array(20).fill('poll_vote_invalid'));
    expect(await storedVotes()).toHaveLength(1);

    const welcome = await rebuiltWelcome('forged-ws', [voter, forger]);
    expect(welcome.pollResults).toEqual([{ pollId, counts: [0, 0, 1], total: 1 }]);
    expectOwnOptions(await dashboardPolls('forged-ws'), pollId, [0, 0, 1]);
  });

  it('lets a session that reconnects within the grace period with a new userId each time vote once, live, after a rebuild and on the dashboard', async () => {
    const pollId = await shownPoll('switch');
    const params = { sessionId: 'svc_switcher', contentId: 'switch' };
    let viewer = await connect(params);
    expect(await viewer.request({ type: 'poll.vote', pollId, optionIndex: 0 })).toMatchObject({ type: 'ack' });
    for (const userId of ['fan-1', 'fan-2', 'fan-3']) {
      viewer.vanish();
      viewer = await connect({ ...params, userId });
      expect(welcomeOf(viewer)).toMatchObject({ session: { resumed: true }, viewer: { votes: { [pollId]: 0 } } });
      expect(await viewer.request({ type: 'poll.vote', pollId, optionIndex: 1 })).toMatchObject({ type: 'error', code: 'already_voted' });
    }
    // The userIds the session took are bound to its vote: another session cannot vote under them.
    const otherDevice = await welcomed('switch', { userId: 'fan-2' });
    expect(await otherDevice.request({ type: 'poll.vote', pollId, optionIndex: 1 })).toMatchObject({ type: 'error', code: 'already_voted' });
    // The same session's vote over HTTP, under yet another userId, is stored but does not count.
    expect((await post([vote('switch', 'svc_switcher', { pollId, optionSelected: 'Team B', optionIndex: 1 }, 'fan-4')])).json()).toMatchObject({ accepted: 1 });
    expect(await storedVotes()).toHaveLength(2);
    await sleep(REALTIME.throttleMs * 4);
    const live = viewer.ofType('poll.results').at(-1);
    expect(live === undefined || (live.total === 1 && JSON.stringify(live.counts) === '[1,0,0]')).toBe(true);

    const welcome = await rebuiltWelcome('switch', [viewer, otherDevice]);
    expect(welcome.pollResults).toEqual([{ pollId, counts: [1, 0, 0], total: 1 }]);
    expectOwnOptions(await dashboardPolls('switch'), pollId, [1, 0, 0]);
  });

  it('counts valid votes sent over HTTP live, after a rebuild and on the dashboard alike, and never a vote about a poll the service does not know', async () => {
    const pollId = await shownPoll('agree');
    const watcher = await welcomed('agree');
    expect(await watcher.request({ type: 'poll.vote', pollId, optionIndex: 0 })).toMatchObject({ type: 'ack' });
    const answer = await post([
      vote('agree', 'svc_http1', { pollId, optionSelected: 'Team B', optionIndex: 1 }),
      vote('agree', 'svc_http2', { pollId, optionSelected: 'Draw', optionIndex: 2 }, 'fan-9'),
      // fan-9 again from another session: one vote per userId.
      vote('agree', 'svc_http3', { pollId, optionSelected: 'Team B', optionIndex: 1 }, 'fan-9'),
      // A poll id the service does not know: stored, never counted.
      vote('agree', 'svc_http4', { pollId: 'poll_notknownyet', optionSelected: 'Option 99', optionIndex: 99 }),
    ]);
    expect(answer.json()).toMatchObject({ accepted: 4, rejected: [] });
    const live = await watcher.next((m) => m.type === 'poll.results' && m.total === 3);
    expect(live).toMatchObject({ pollId, counts: [1, 1, 1], total: 3 });

    const welcome = await rebuiltWelcome('agree', [watcher]);
    expect(welcome.pollResults).toEqual([{ pollId, counts: [1, 1, 1], total: 3 }]);
    expectOwnOptions(await dashboardPolls('agree'), pollId, [1, 1, 1]);
  });

  it('refuses to change the options of a poll that has votes, so that no stored vote changes meaning', async () => {
    const pollId = await shownPoll('edit');
    const voter = await welcomed('edit');
    expect(await voter.request({ type: 'poll.vote', pollId, optionIndex: 0 })).toMatchObject({ type: 'ack' });
    await t.app.inject({ method: 'POST', url: `/v1/broadcasts/edit/overlays/${pollId}/hide`, headers: admin() });
    const url = `/v1/broadcasts/edit/overlays/${pollId}`;
    const relabel = await t.app.inject({ method: 'PATCH', url, headers: admin(), payload: { question: 'Who wins?', options: ['Attacker wins', 'Team B', 'Draw'] } });
    expect(relabel.statusCode).toBe(409);
    expect(relabel.json().code).toBe('conflict');
    // A poll nobody voted on may still be corrected.
    const fresh = await shownPoll('edit-fresh');
    await t.app.inject({ method: 'POST', url: `/v1/broadcasts/edit-fresh/overlays/${fresh}/hide`, headers: admin() });
    const fixed = await t.app.inject({ method: 'PATCH', url: `/v1/broadcasts/edit-fresh/overlays/${fresh}`, headers: admin(), payload: { question: 'Who wins?', options: ['Team A', 'Team C'] } });
    expect(fixed.statusCode, fixed.body).toBe(200);
    // Votes are checked against the corrected poll at once.
    const stale = await post([vote('edit-fresh', 'svc_stale', { pollId: fresh, optionSelected: 'Team B', optionIndex: 1 })]);
    expect(stale.json().rejected).toMatchObject([{ code: 'poll_vote_invalid' }]);
  });
});
