import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_API_KEY, clusterEnginesAvailable, startClusterEngines, startClusterNode, type ClusterEngines } from './cluster-engines';
import { adminCall, adminHeaders, until } from './cluster-client';
import type { ChildServer } from './child-server';
import { TestViewer, type Message } from './ws-client';

const available = clusterEnginesAvailable();

/** The gateway's default throttle of poll results (`GatewayOptions.throttleMs`). */
const THROTTLE_MS = 1_000;
/** How long a change may take to cross from one node's API to another node's viewers on a busy machine. */
const CROSSES_WITHIN_MS = 5_000;
/** How long a closed session waits to be resumed before it ends. */
const RESUME_GRACE_MS = 300;
/** How often a node publishes its viewer counts (`VIEWER_COUNT_INTERVAL_MS`). */
const VIEWER_COUNT_INTERVAL_MS = 1_000;
/** How long after a room opened it reads the stored votes and entries again (`GatewayOptions.rereadStoredAfterMs`). */
const REREAD_STORED_AFTER_MS = 5_000;
/** Votes sent by viewers on nodes B and C. */
const VOTERS_PER_NODE = 4;

describe.runIf(available)('three nodes share one bus on NATS: overlays, votes, erasures and viewer counts reach every node', () => {
  let engines: ClusterEngines;
  let a: ChildServer;
  let b: ChildServer;
  let c: ChildServer;
  /** The node the last test kills (node C is killed before it). */
  let d: ChildServer | undefined;
  let env: Record<string, string>;
  const viewers: TestViewer[] = [];
  let sessions = 0;

  beforeAll(async () => {
    engines = await startClusterEngines({ natsNodes: 3 });
    // A closed session ends (and its broadcast.left is written) soon after its socket closed.
    env = { ...(await engines.clusterEnv()), SVC_WS_RESUME_GRACE_MS: String(RESUME_GRACE_MS) };
    [a, b, c] = await Promise.all([startClusterNode(env), startClusterNode(env), startClusterNode(env)]);
  }, 120_000);
  afterEach(() => {
    for (const viewer of viewers.splice(0)) viewer.ws.terminate();
  });
  afterAll(async () => {
    for (const node of [a, b, c, d]) {
      if (!node) continue;
      node.process.kill('SIGTERM');
      await node.exited;
    }
    await engines?.stop();
  });

  const call = (node: ChildServer, method: string, path: string, body?: unknown) => adminCall(node.url, method, path, body);
  const broadcast = async (id: string) => {
    const campaign = await call(a, 'POST', '/v1/campaigns', { name: `campaign of ${id}` });
    expect(campaign.status).toBe(201);
    expect((await call(a, 'POST', '/v1/broadcasts', { id, campaignId: campaign.body.id })).status).toBe(201);
  };
  const overlay = async (broadcastId: string, body: unknown) => {
    const created = await call(a, 'POST', `/v1/broadcasts/${broadcastId}/overlays`, body);
    expect(created.status).toBe(201);
    return String(created.body.id);
  };
  const welcomed = async (node: ChildServer, contentId: string, extra: Record<string, string> = {}) => {
    const viewer = await TestViewer.connect(node.url, { apiKey: CLUSTER_API_KEY, sessionId: `svc_bus${++sessions}`, contentId, ...extra });
    viewers.push(viewer);
    return { viewer, welcome: await viewer.next((m) => m.type === 'welcome', 10_000) };
  };

  it("shows, updates and hides an overlay through node A's API on a viewer of node B; a viewer joining B later gets it in welcome", async () => {
    await broadcast('bus-lineup');
    const lineupId = await overlay('bus-lineup', { type: 'lineup', items: [{ title: 'Kick-off' }] });
    const { viewer } = await welcomed(b, 'bus-lineup');

    expect((await call(a, 'POST', `/v1/broadcasts/bus-lineup/overlays/${lineupId}/show`)).status).toBe(200);
    expect((await viewer.next((m) => m.type === 'overlay.show', CROSSES_WITHIN_MS)).overlay).toMatchObject({ id: lineupId, items: [{ title: 'Kick-off' }] });
    const late = await welcomed(b, 'bus-lineup');
    expect((late.welcome.overlays as Message[]).map((o) => o.id)).toEqual([lineupId]);

    const updated = await call(a, 'PATCH', `/v1/broadcasts/bus-lineup/overlays/${lineupId}`, { type: 'lineup', items: [{ title: 'Kick-off' }, { title: 'Half time' }] });
    expect(updated.status).toBe(200);
    for (const watcher of [viewer, late.viewer]) {
      expect((await watcher.next((m) => m.type === 'overlay.update', CROSSES_WITHIN_MS)).overlay).toMatchObject({ id: lineupId, items: [{ title: 'Kick-off' }, { title: 'Half time' }] });
    }
    expect((await call(a, 'POST', `/v1/broadcasts/bus-lineup/overlays/${lineupId}/hide`)).status).toBe(200);
    for (const watcher of [viewer, late.viewer]) expect(await watcher.next((m) => m.type === 'overlay.hide', CROSSES_WITHIN_MS)).toMatchObject({ overlayId: lineupId });
    // Deleted through node C once hidden: its deletion is published all the same, and tells viewers nothing (no second hide).
    expect((await call(c, 'DELETE', `/v1/broadcasts/bus-lineup/overlays/${lineupId}`)).status).toBe(204);
    // Each change came once, though the message also went back to node A and on to node C.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(viewer.messages.filter((m) => m.type.startsWith('overlay.')).map((m) => m.type)).toEqual(['overlay.show', 'overlay.update', 'overlay.hide']);
    expect(late.viewer.messages.filter((m) => m.type.startsWith('overlay.')).map((m) => m.type)).toEqual(['overlay.update', 'overlay.hide']);
  }, 60_000);

  it('counts the votes of viewers on nodes B and C once each in the live results a viewer on node A receives, within the throttle', async () => {
    await broadcast('bus-poll');
    const pollId = await overlay('bus-poll', { type: 'poll', question: 'Who wins?', options: ['Home', 'Away'] });
    expect((await call(a, 'POST', `/v1/broadcasts/bus-poll/overlays/${pollId}/show`)).status).toBe(200);
    const { viewer: watcher } = await welcomed(a, 'bus-poll');
    const voters = await Promise.all([b, c].flatMap((node) => Array.from({ length: VOTERS_PER_NODE }, async () => (await welcomed(node, 'bus-poll')).viewer)));
    const answers = await Promise.all(voters.map((voter, i) => voter.request({ type: 'poll.vote', pollId, optionIndex: i % 4 === 0 ? 1 : 0 }, 10_000)));
    expect(answers.map((answer) => answer.type)).toEqual(voters.map(() => 'ack'));

    const total = 2 * VOTERS_PER_NODE;
    const results = await watcher.next((m) => m.type === 'poll.results' && m.total === total, CROSSES_WITHIN_MS + THROTTLE_MS);
    expect(results).toMatchObject({ pollId, counts: [total - 2, 2], total });
    // Nothing counted twice: no later result goes beyond, and a viewer joining C sees the same.
    await new Promise((resolve) => setTimeout(resolve, 2 * THROTTLE_MS));
    expect(Math.max(...watcher.ofType('poll.results').map((m) => Number(m.total)))).toBe(total);
    const pushed = watcher.ofType('poll.results');
    expect(pushed.length).toBeLessThan(total);
    const { welcome } = await welcomed(c, 'bus-poll');
    expect(welcome.pollResults).toEqual([{ pollId, counts: [total - 2, 2], total }]);
  }, 60_000);

  it("forgets, on node B, the userId of a viewer's open session once their erasure was asked of node A", async () => {
    await broadcast('bus-erasure');
    const user = 'bus-erased-user';
    const { viewer } = await welcomed(b, 'bus-erasure', { userId: user });
    const { viewer: bystander } = await welcomed(c, 'bus-erasure', { userId: 'bus-bystander' });
    const requested = await call(a, 'DELETE', `/v1/users/${user}/events`);
    expect(requested.status).toBe(202);
    await until('the deletion job completes', async () => (await call(a, 'GET', `/v1/deletions/${String(requested.body.id)}`)).body.status === 'completed', 60_000, 200);

    // The session goes on; node B's broadcast.left for it carries no userId any more.
    viewer.close();
    bystander.close();
    await until('both broadcast.left stored', async () => (await leftOf('bus-erasure')).length === 2, 30_000, 500);
    expect((await leftOf('bus-erasure')).map((e) => [e.sessionId === sessionOf(viewer) ? 'erased' : 'bystander', e.userId ?? null]).sort()).toEqual([
      ['bystander', 'bus-bystander'],
      ['erased', null],
    ]);
  }, 120_000);

  it('closes, on nodes B and C, the open sockets of an API key revoked through node A, and only those', async () => {
    await broadcast('bus-revoked');
    const created = await call(a, 'POST', '/v1/api-keys', { name: 'revoked across nodes' });
    expect(created.status).toBe(201);
    const key = String(created.body.key);
    const doomed = await Promise.all([welcomed(b, 'bus-revoked', { apiKey: key }), welcomed(c, 'bus-revoked', { apiKey: key })]);
    const { viewer: kept } = await welcomed(b, 'bus-revoked');
    const revokedAt = Date.now();
    expect((await call(a, 'DELETE', `/v1/api-keys/${String(created.body.id)}`)).status).toBe(200);
    for (const { viewer } of doomed) expect(await viewer.closed).toEqual({ code: 4401, reason: 'invalid_api_key' });
    expect(Date.now() - revokedAt).toBeLessThan(CROSSES_WITHIN_MS);
    const still = await Promise.race([kept.closed, new Promise((resolve) => setTimeout(() => resolve('open'), 300))]);
    expect(still).toBe('open');
  }, 60_000);

  it('takes one vote per userId across the nodes: a second session of a viewer who voted on node C is refused on node A, whose welcome shows the vote', async () => {
    const user = 'claims-user';
    const pollIn = async (broadcastId: string) => {
      await broadcast(broadcastId);
      const pollId = await overlay(broadcastId, { type: 'poll', question: 'Who wins?', options: ['Home', 'Away'] });
      expect((await call(a, 'POST', `/v1/broadcasts/${broadcastId}/overlays/${pollId}/show`)).status).toBe(200);
      return pollId;
    };
    const openPoll = await pollIn('claims-open');
    const latePoll = await pollIn('claims-late');
    // The room of claims-open is open on node A (a viewer of the same user watches there) before the vote.
    const { viewer: firstOnA } = await welcomed(a, 'claims-open', { userId: user });
    const { viewer: onC } = await welcomed(c, 'claims-open', { userId: user });
    expect(await onC.request({ type: 'poll.vote', pollId: openPoll, optionIndex: 1 }, 10_000)).toMatchObject({ type: 'ack' });
    await firstOnA.next((m) => m.type === 'poll.results' && m.total === 1, CROSSES_WITHIN_MS + THROTTLE_MS);
    const { viewer: secondOnA, welcome } = await welcomed(a, 'claims-open', { userId: user });
    expect(welcome.viewer).toMatchObject({ votes: { [openPoll]: 1 } });
    for (const session of [firstOnA, secondOnA]) {
      expect(await session.request({ type: 'poll.vote', pollId: openPoll, optionIndex: 0 }, 10_000)).toMatchObject({ type: 'error', code: 'already_voted' });
    }

    // claims-late's room opens on node A only after the vote, perhaps before the writer stored it in ClickHouse.
    const { viewer: lateOnC } = await welcomed(c, 'claims-late', { userId: user });
    expect(await lateOnC.request({ type: 'poll.vote', pollId: latePoll, optionIndex: 0 }, 10_000)).toMatchObject({ type: 'ack' });
    const { viewer: lateOnA } = await welcomed(a, 'claims-late', { userId: user });
    expect(await lateOnA.request({ type: 'poll.vote', pollId: latePoll, optionIndex: 1 }, 10_000)).toMatchObject({ type: 'error', code: 'already_voted' });
    // The room reads the stored votes again once the writer had time to store the vote (`rereadStoredAfterMs`): welcomes on A show it.
    await until("a welcome on node A shows the vote cast on node C", async () => {
      const { viewer, welcome } = await welcomed(a, 'claims-late', { userId: user });
      viewer.close();
      return (welcome.viewer as { votes: Record<string, number> }).votes[latePoll] === 0;
    }, REREAD_STORED_AFTER_MS + CROSSES_WITHIN_MS, 500);
    // Counted once wherever the results are read.
    await new Promise((resolve) => setTimeout(resolve, 2 * THROTTLE_MS));
    expect(Math.max(...firstOnA.ofType('poll.results').map((m) => Number(m.total)))).toBe(1);
  }, 60_000);

  it('counts the viewers of every node in viewers messages, welcome and watching-now; a node killed stops counting within two intervals', async () => {
    await broadcast('bus-count');
    const onA = [(await welcomed(a, 'bus-count')).viewer, (await welcomed(a, 'bus-count')).viewer];
    const onB = (await welcomed(b, 'bus-count')).viewer;
    const onC = (await welcomed(c, 'bus-count')).viewer;
    const counted = CROSSES_WITHIN_MS + VIEWER_COUNT_INTERVAL_MS + THROTTLE_MS;
    for (const viewer of [...onA, onB, onC]) await viewer.next((m) => m.type === 'viewers' && m.count === 4, counted);
    expect((await welcomed(b, 'bus-count')).welcome.viewers).toBe(5);
    await until('node A tells the dashboard of 5 viewers', async () => {
      const watching = await call(a, 'GET', '/v1/analytics/watching-now');
      return (watching.body.data as Array<{ broadcastId: string; live: number }>).some((row) => row.broadcastId === 'bus-count' && row.live === 5);
    }, counted, 200);

    await onA[0]!.next((m) => m.type === 'viewers' && m.count === 5, counted);

    // Node C vanishes without a word: its viewer stops counting once its counts expire.
    const seen = onA[0]!.messages.length;
    const killedAt = Date.now();
    c.process.kill('SIGKILL');
    await c.exited;
    await onA[0]!.next((m) => m.type === 'viewers' && m.count === 4, 2 * VIEWER_COUNT_INTERVAL_MS + THROTTLE_MS + CROSSES_WITHIN_MS, seen);
    console.info(`the count on node A dropped ${Date.now() - killedAt} ms after node C was killed`);
    expect(onA[0]!.messages.slice(seen).filter((m) => m.type === 'viewers').map((m) => m.count)).toEqual([4]);
  }, 60_000);

  it("kills a node: its viewers reconnect to the other nodes and resume their sessions (one broadcast.joined each, no broadcast.left), the count settles, and a vote cast on it holds", async () => {
    // A third node of its own (node C was killed above), started on the same cluster.
    const third = await startClusterNode(env);
    d = third;
    const nodes = [a, b, third];
    await broadcast('bus-resume');
    const pollId = await overlay('bus-resume', { type: 'poll', question: 'Who wins?', options: ['Home', 'Away'] });
    expect((await call(a, 'POST', `/v1/broadcasts/bus-resume/overlays/${pollId}/show`)).status).toBe(200);
    // Each viewer does what the SDK does: it writes broadcast.joined on a welcome that did not resume its session.
    const join = async (node: ChildServer, sessionId: string) => {
      const viewer = await TestViewer.connect(node.url, { apiKey: CLUSTER_API_KEY, sessionId, contentId: 'bus-resume' });
      viewers.push(viewer);
      const welcome = await viewer.next((m) => m.type === 'welcome', 10_000);
      if (!(welcome.session as { resumed: boolean }).resumed) {
        const ack = await viewer.request({ type: 'track', events: [{ event: 'broadcast.joined', timestamp: new Date().toISOString(), data: {} }] }, 10_000);
        expect(ack.type).toBe('ack');
      }
      return { viewer, welcome };
    };
    const total = 6;
    const first = await Promise.all(Array.from({ length: total }, (_, i) => join(nodes[i % 3]!, `svc_resume${i}`)));
    const onThird = [first[2]!.viewer, first[5]!.viewer];
    const staying = first.filter((_, i) => i % 3 !== 2).map(({ viewer }) => viewer);
    const counted = CROSSES_WITHIN_MS + VIEWER_COUNT_INTERVAL_MS + THROTTLE_MS;
    for (const { viewer } of first) await viewer.next((m) => m.type === 'viewers' && m.count === total, counted);
    // A viewer votes on the third node; node A counts it.
    expect((await onThird[0]!.request({ type: 'poll.vote', pollId, optionIndex: 0 }, 10_000)).type).toBe('ack');
    await staying[0]!.next((m) => m.type === 'poll.results' && m.total === 1, CROSSES_WITHIN_MS + THROTTLE_MS);

    // The third node vanishes without a word; its viewers reconnect, the voter to A, the other to B.
    const killedAt = Date.now();
    third.process.kill('SIGKILL');
    await third.exited;
    await Promise.all(onThird.map((viewer) => viewer.closed));
    const moved = await Promise.all(onThird.map((viewer, i) => join([a, b][i]!, sessionOf(viewer))));
    console.info(`the viewers of the killed node were welcomed again ${Date.now() - killedAt} ms after it was killed`);
    expect(moved.map(({ welcome }) => welcome.session)).toEqual(onThird.map((viewer) => ({ id: sessionOf(viewer), resumed: true })));

    // The voter cannot vote again on A.
    expect((moved[0]!.welcome.viewer as { votes: Record<string, number> }).votes).toEqual({ [pollId]: 0 });
    expect(await moved[0]!.viewer.request({ type: 'poll.vote', pollId, optionIndex: 1 }, 10_000)).toMatchObject({ type: 'error', code: 'already_voted' });

    // The count on A and B settles to the total within two count intervals (the killed node's counts expire), and stays.
    const lastCount = (viewer: TestViewer) => viewer.messages.filter((m) => m.type === 'viewers').at(-1)?.count;
    const everyone = [...staying, ...moved.map((m) => m.viewer)];
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, killedAt + 2 * VIEWER_COUNT_INTERVAL_MS + THROTTLE_MS - Date.now())));
    await until('every viewer on A and B is told the total', () => everyone.every((viewer) => lastCount(viewer) === total), CROSSES_WITHIN_MS, 100);
    await new Promise((resolve) => setTimeout(resolve, 2 * VIEWER_COUNT_INTERVAL_MS));
    expect(everyone.map(lastCount)).toEqual(everyone.map(() => total));
    const watching = await call(a, 'GET', '/v1/analytics/watching-now');
    expect((watching.body.data as Array<{ broadcastId: string; live: number }>).find((row) => row.broadcastId === 'bus-resume')?.live).toBe(total);

    // Stored, through node A's API once the writer caught up: one broadcast.joined per session, no broadcast.left.
    const sessionIds = first.map(({ viewer }) => sessionOf(viewer)).sort();
    await until('every broadcast.joined stored', async () => (await storedOf(a, 'bus-resume', 'broadcast.joined')).length >= total, 30_000, 500);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await storedOf(a, 'bus-resume', 'broadcast.joined')).map((e) => e.sessionId).sort()).toEqual(sessionIds);
    expect(await storedOf(a, 'bus-resume', 'broadcast.left')).toEqual([]);
  }, 120_000);

  const sessionOf = (viewer: TestViewer) => String((viewer.messages.find((m) => m.type === 'welcome')!.session as { id: string }).id);
  /** The stored broadcast.left events of a broadcast, read through node C. */
  const leftOf = (broadcastId: string) => storedOf(c, broadcastId, 'broadcast.left');
  /** The stored events of one type of a broadcast, read through `node`. */
  const storedOf = async (node: ChildServer, broadcastId: string, event: string) => {
    const response = await fetch(`${node.url}/v1/analytics/events?format=ndjson&event=${event}&broadcastId=${broadcastId}`, { headers: adminHeaders });
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(200);
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { sessionId: string; userId?: string | null; broadcastId: string; event: string })
      .filter((e) => e.broadcastId === broadcastId && e.event === event);
  };
});
