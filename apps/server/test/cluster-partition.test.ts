import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '@svc/protocol';
import { CLUSTER_API_KEY, clusterEnginesAvailable, natsServerOf, startClusterEngines, startClusterNode, type ClusterEngines } from './cluster-engines';
import { adminCall, adminHeaders, until } from './cluster-client';
import type { ChildServer } from './child-server';
import { faultSeed } from './fault-seed';
import { TestViewer, type Message } from './ws-client';

const available = clusterEnginesAvailable();

const OPTIONS = ['Home', 'Away', 'Draw'];
/** Viewers voting in each test. */
const VOTERS = 6;
/** How long a vote may wait for its answer (a node whose NATS server hangs gives up on it after about 6 s). */
const ANSWER_WAIT_MS = 20_000;
/** How long the results on every node and the stored votes may take to agree after the fault. */
const SETTLES_WITHIN_MS = 30_000;
const WRITER_ACK_WAIT_MS = 5_000;
/** A closed session waits this long to be resumed (long enough for a viewer to move to another node). */
const RESUME_GRACE_MS = 30_000;

type Results = { pollId: string; counts: number[]; total: number };

/**
 * A partition between a node and NATS, simulated by freezing a process (SIGSTOP) and letting it
 * go on (SIGCONT): first the Svc node itself, with its viewers' frames waiting in its sockets,
 * then the NATS server the node is connected to. Either way each viewer's vote counts at most
 * once, in the results of every node and in the stored events, and a viewer whose vote was never
 * acknowledged can vote once things recover.
 */
describe.runIf(available)('a node cut off from NATS while its viewers vote', () => {
  let engines: ClusterEngines;
  let a: ChildServer;
  let b: ChildServer;
  const viewers: TestViewer[] = [];
  beforeAll(async () => {
    engines = await startClusterEngines({ natsNodes: 3 });
    // Events a writer had taken from the stream through a frozen NATS server go to another writer
    // after the ack wait: short here, as in the other fault tests, so that they settle in time.
    const env = { ...(await engines.clusterEnv()), SVC_WS_RESUME_GRACE_MS: String(RESUME_GRACE_MS), SVC_WRITER_ACK_WAIT_MS: String(WRITER_ACK_WAIT_MS) };
    [a, b] = await Promise.all([startClusterNode(env, { SVC_NODE_ID: 'partition-a' }), startClusterNode(env, { SVC_NODE_ID: 'partition-b' })]);
  }, 120_000);
  afterEach(() => {
    for (const viewer of viewers.splice(0)) viewer.ws.terminate();
    a?.process.kill('SIGCONT');
    for (const server of engines?.natsCluster?.nodes ?? []) server.thaw();
  });
  afterAll(async () => {
    for (const node of [a, b]) {
      if (!node) continue;
      node.process.kill('SIGCONT');
      node.process.kill('SIGTERM');
      await node.exited;
    }
    await engines?.stop();
  });

  const shownPoll = async (broadcastId: string) => {
    const campaign = await adminCall(a.url, 'POST', '/v1/campaigns', { name: broadcastId });
    expect((await adminCall(a.url, 'POST', '/v1/broadcasts', { id: broadcastId, campaignId: campaign.body.id })).status).toBe(201);
    const poll = await adminCall(a.url, 'POST', `/v1/broadcasts/${broadcastId}/overlays`, { type: 'poll', question: 'Who wins?', options: OPTIONS });
    expect(poll.status).toBe(201);
    const pollId = String(poll.body.id);
    expect((await adminCall(a.url, 'POST', `/v1/broadcasts/${broadcastId}/overlays/${pollId}/show`)).status).toBe(200);
    return pollId;
  };
  const welcomed = async (node: ChildServer, sessionId: string, contentId: string) => {
    const viewer = await TestViewer.connect(node.url, { apiKey: CLUSTER_API_KEY, sessionId, contentId });
    viewers.push(viewer);
    return { viewer, welcome: await viewer.next((m) => m.type === 'welcome', ANSWER_WAIT_MS) };
  };
  /** Sends a vote and waits for its answer: 'ack', an error code, or 'no answer'. */
  const vote = async (viewer: TestViewer, pollId: string, optionIndex: number): Promise<string> => {
    const answer = await viewer.request({ type: 'poll.vote', pollId, optionIndex }, ANSWER_WAIT_MS).catch(() => null);
    return answer === null ? 'no answer' : answer.type === 'ack' ? 'ack' : String(answer.code);
  };
  /** The poll's results in the welcome of a fresh viewer of `node`. */
  const resultsOn = async (node: ChildServer, broadcastId: string, pollId: string): Promise<Results | undefined> => {
    const { viewer, welcome } = await welcomed(node, `svc_look${Math.random().toString(36).slice(2, 10)}`, broadcastId);
    viewer.ws.terminate();
    return (welcome.pollResults as Results[]).find((r) => r.pollId === pollId);
  };
  /** The stored poll.voted events of a broadcast, read through `node`: their sessions and options. */
  const storedVotes = async (node: ChildServer, broadcastId: string) => {
    const response = await fetch(`${node.url}/v1/analytics/events?format=ndjson&event=poll.voted&broadcastId=${broadcastId}`, { headers: adminHeaders });
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(200);
    return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { sessionId: string; data: { optionIndex: number } });
  };
  /** Counts per option of the votes `byVoter` (one option per voter). */
  const countsOf = (byVoter: Map<string, number>) => OPTIONS.map((_, option) => [...byVoter.values()].filter((chosen) => chosen === option).length);

  /**
   * Every voter counted once, with the option `byVoter` names, in the welcome of each node, in the
   * live results and in the stored events.
   */
  const expectCountedOnce = async (broadcastId: string, pollId: string, byVoter: Map<string, number>, watchers: TestViewer[]) => {
    const expected: Results = { pollId, counts: countsOf(byVoter), total: byVoter.size };
    await until('every vote is stored', async () => (await storedVotes(a, broadcastId)).length >= byVoter.size, SETTLES_WITHIN_MS, 1_000).catch(() => {});
    // A late vote (a frame that waited in a frozen node's socket) would show after a pause.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const stored = await storedVotes(b, broadcastId);
    expect(stored.map((e) => e.sessionId).sort()).toEqual([...byVoter.keys()].sort());
    expect(new Map(stored.map((e) => [e.sessionId, e.data.optionIndex]))).toEqual(byVoter);
    for (const node of [a, b]) {
      await until('the results of a node agree', async () => JSON.stringify(await resultsOn(node, broadcastId, pollId)) === JSON.stringify(expected), SETTLES_WITHIN_MS, 1_000).catch(() => {});
      expect(await resultsOn(node, broadcastId, pollId)).toEqual(expected);
    }
    for (const watcher of watchers) {
      const totals = watcher.ofType('poll.results').filter((m: Message) => m.pollId === pollId).map((m) => Number(m.total));
      expect(Math.max(0, ...totals)).toBeLessThanOrEqual(byVoter.size);
    }
  };

  it('counts each vote once when node A is frozen while its viewers vote, they vote again on node B, and A then goes on with the frames that waited', async () => {
    const random = seededRandom(faultSeed('Svc node frozen while its viewers vote'));
    const broadcastId = 'partition-node';
    const pollId = await shownPoll(broadcastId);
    const { viewer: watcher } = await welcomed(b, 'svc_partwatch', broadcastId);
    const onA = await Promise.all(Array.from({ length: VOTERS }, (_, i) => welcomed(a, `svc_partnode${i}`, broadcastId)));
    // Some vote before the freeze (acknowledged), the others while node A is frozen (no answer).
    const early = 1 + Math.floor(random() * (VOTERS - 2));
    const byVoter = new Map<string, number>();
    for (let i = 0; i < early; i++) {
      expect(await vote(onA[i]!.viewer, pollId, 0)).toBe('ack');
      byVoter.set(`svc_partnode${i}`, 0);
    }
    a.process.kill('SIGSTOP');
    try {
      for (let i = early; i < VOTERS; i++) onA[i]!.viewer.send({ type: 'poll.vote', pollId, optionIndex: 0, requestId: `frozen${i}` });
      await new Promise((resolve) => setTimeout(resolve, 300 + random() * 1_000));
      // The viewers give up on node A (as the SDK does with a socket silent for two heartbeat periods) and resume on node B;
      // cut off, node A never hears them go: their sockets stay open, the votes waiting in them.
      const moved = await Promise.all(onA.map((_, i) => welcomed(b, `svc_partnode${i}`, broadcastId)));
      for (const [i, { viewer }] of moved.entries()) {
        // A voter whose vote was acknowledged is refused; one whose vote never was may vote, for another option.
        const answer = await vote(viewer, pollId, 1);
        if (i < early) expect(answer, `voter ${i}`).toBe('already_voted');
        else {
          expect(answer, `voter ${i}`).toBe('ack');
          byVoter.set(`svc_partnode${i}`, 1);
        }
      }
    } finally {
      a.process.kill('SIGCONT');
    }
    // Node A reads the votes that waited in its sockets: none may count, none be acknowledged.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const late = onA.slice(early).map(({ viewer }, i) => {
      const answer = viewer.messages.find((m) => m.requestId === `frozen${early + i}`);
      return answer ? (answer.type === 'ack' ? 'ack' : String(answer.code)) : viewer.ws.readyState === viewer.ws.OPEN ? 'no answer' : 'closed';
    });
    console.info(`${early} votes acknowledged before node A was frozen; node A's answers to the ${VOTERS - early} that waited: ${late.join(', ')}`);
    expect(late).not.toContain('ack');
    await expectCountedOnce(broadcastId, pollId, byVoter, [watcher]);
  }, 150_000);

  it("counts each vote once when the NATS server of node A hangs while viewers vote through A and B; every voter can vote once it is back", async () => {
    const random = seededRandom(faultSeed('NATS server of a node frozen while viewers vote'));
    const broadcastId = 'partition-nats';
    const pollId = await shownPoll(broadcastId);
    const servers = engines.natsCluster!.nodes;
    const index = await natsServerOf(servers, 'partition-a');
    expect(index).toBeGreaterThanOrEqual(0);
    const voters = await Promise.all(Array.from({ length: VOTERS }, (_, i) => welcomed(i % 2 ? b : a, `svc_partnats${i}`, broadcastId)));
    const frozenMs = 2_000 + Math.floor(random() * 8_000);
    await servers[index]!.freeze();
    const firstAnswers = await (async () => {
      try {
        const thaw = new Promise((resolve) => setTimeout(resolve, frozenMs));
        const answers = await Promise.all(voters.map(({ viewer }, i) => vote(viewer, pollId, i % OPTIONS.length)));
        await thaw;
        return answers;
      } finally {
        servers[index]!.thaw();
      }
    })();
    console.info(`NATS server n${index + 1} of node A frozen ${frozenMs} ms; first answers: ${firstAnswers.join(', ')}`);
    expect(firstAnswers.filter((answer) => !['ack', 'storage_unavailable', 'no answer'].includes(answer))).toEqual([]);

    // Each voter not acknowledged votes again (same option) until answered: a vote that counted after all is refused, any other taken.
    const byVoter = new Map<string, number>();
    for (const [i, first] of voters.entries()) {
      byVoter.set(`svc_partnats${i}`, i % OPTIONS.length);
      if (firstAnswers[i] === 'ack') continue;
      let viewer = first.viewer;
      await until(`voter ${i} is answered`, async () => {
        // As the SDK does, a viewer whose socket closed meanwhile connects again (the same session).
        if (viewer.ws.readyState !== viewer.ws.OPEN) viewer = (await welcomed(i % 2 ? b : a, `svc_partnats${i}`, broadcastId)).viewer;
        return ['ack', 'already_voted'].includes(await vote(viewer, pollId, i % OPTIONS.length));
      }, SETTLES_WITHIN_MS, 1_000);
    }
    await expectCountedOnce(broadcastId, pollId, byVoter, voters.map(({ viewer }) => viewer));
  }, 150_000);
});
