import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '@svc/protocol';
import { EVENTS_STREAM } from '@svc/storage';
import { CLUSTER_API_KEY, clusterEnginesAvailable, startClusterEngines, startClusterNode, type ClusterEngines } from './cluster-engines';
import { adminCall, adminHeaders, BATCH_SIZE, exportedIdsNdjson, exportProblems, makeBatch, sendOnce, summarized, until, type Batch, exportedOnceProblems, ingestConcurrently, NO_EXPORT_PROBLEMS } from './cluster-client';
import type { ChildServer } from './child-server';
import { faultSeed } from './fault-seed';
import { TestViewer } from './ws-client';

const available = clusterEnginesAvailable();

/** Requests in flight at once. */
const CLIENTS = 4;
/** A dead writer's messages come back to another writer after this (a minute by default). */
const WRITER_ACK_WAIT_MS = 5_000;
/** How long the writers may take, after the fault, to make every acknowledged event readable. */
const STORED_WITHIN_MS = 60_000;
/** How long a client waits before sending a refused batch again. */
const RETRY_DELAY_MS = 200;

interface Answer {
  status: number;
  retryAfter: string | null;
}

/**
 * Faults of the engines under a full cluster of two Svc nodes on three NATS servers (streams
 * with three replicas): one NATS server SIGKILLed mid-ingest, PostgreSQL killed and started again
 * on the same data while every kind of traffic goes on. Seen from outside: every answer is an
 * acknowledgement or a 503 with Retry-After, and the export holds each acknowledged event once.
 */
describe.runIf(available)('a full cluster on three NATS servers while an engine fails', () => {
  let engines: ClusterEngines;
  let env: Record<string, string>;
  const nodes: ChildServer[] = [];
  beforeAll(async () => {
    engines = await startClusterEngines({ natsNodes: 3 });
  }, 90_000);
  afterEach(async () => {
    for (const node of nodes.splice(0)) {
      node.process.kill('SIGKILL');
      await node.exited;
    }
  });
  afterAll(async () => {
    await engines?.stop();
  });

  const twoNodes = async () => {
    env = { ...(await engines.clusterEnv()), SVC_WRITER_ACK_WAIT_MS: String(WRITER_ACK_WAIT_MS) };
    const started = await Promise.all([startClusterNode(env), startClusterNode(env)]);
    nodes.push(...started);
    return started;
  };

  /**
   * Sends each batch as the SDK does, through both nodes in turn until one acknowledges it;
   * every answer is kept. `onAcknowledged` runs after each acknowledged batch.
   */
  const ingest = (batches: Batch[], urls: string[], answers: Answer[], onAcknowledged?: (done: number) => void | Promise<void>) =>
    ingestConcurrently(
      batches,
      CLIENTS,
      async (batch, k) => {
        for (let attempt = k; ; attempt++) {
          const result = await sendOnce(urls[attempt % urls.length]!, batch);
          answers.push(result.ok ? { status: 200, retryAfter: null } : { status: result.status ?? 0, retryAfter: result.retryAfter ?? null });
          if (result.ok) return result.answer;
          await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
        }
      },
      onAcknowledged,
    );

  /** Answers other than an acknowledgement or a 503 with Retry-After (a lost connection counts as 0). */
  const wrongAnswers = (answers: Answer[]) => answers.filter((a) => a.status !== 200 && !(a.status === 503 && Number(a.retryAfter) >= 1));

  const expectStoredOnce = async (url: string, acknowledged: Set<string>) => {
    expect(await exportedOnceProblems(url, acknowledged, STORED_WITHIN_MS)).toEqual(NO_EXPORT_PROBLEMS);
  };

  it('loses and doubles nothing when the NATS server leading the event stream is SIGKILLed mid-ingest; every answer is 200 or 503 with Retry-After; the restarted server rejoins', async () => {
    const random = seededRandom(faultSeed('NATS server kill mid-ingest'));
    const [a, b] = await twoNodes();
    const servers = engines.natsCluster!.nodes;
    const nc = await connect({ servers: env.SVC_NATS_URL!.split(',') });
    let killed = -1;
    let restarted = false;
    try {
      const jsm = await jetstreamManager(nc);
      const leaderIndex = async () => Number(String((await jsm.streams.info(EVENTS_STREAM)).cluster?.leader).replace(/^n/, '')) - 1;
      const batches = Array.from({ length: 60 }, (_, i) => makeBatch(BATCH_SIZE, (j) => `nats-${(i + j) % 11}`));
      const killAfter = 3 + Math.floor(random() * 25);
      const answers: Answer[] = [];
      const acknowledged = await ingest(batches, [a.url, b.url], answers, async (done) => {
        if (done !== killAfter) return;
        killed = await leaderIndex();
        await servers[killed]!.kill();
      });
      expect(killed).toBeGreaterThanOrEqual(0);
      console.info(`NATS server n${killed + 1} killed after ${killAfter} batches: ${answers.filter((x) => x.status === 200).length} acknowledged, ${answers.filter((x) => x.status === 503).length} answered 503`);
      expect(wrongAnswers(answers)).toEqual([]);
      await expectStoredOnce(a.url, acknowledged);

      // The server comes back with its folder and catches up: the stream has its three replicas current again.
      await servers[killed]!.restart();
      restarted = true;
      await until('the restarted server is a current replica again', async () => {
        const cluster = (await jsm.streams.info(EVENTS_STREAM)).cluster;
        const replicas = [cluster?.leader, ...(cluster?.replicas ?? []).filter((r) => r.current && !r.offline).map((r) => r.name)];
        return replicas.includes(`n${killed + 1}`) && replicas.length === 3;
      }, 60_000, 500);
      const after = new Set<string>();
      for (const batch of Array.from({ length: 4 }, () => makeBatch(50, () => 'after'))) {
        const answer = await sendOnce(b.url, batch);
        expect(answer.ok).toBe(true);
        for (const e of batch) after.add(String(e.eventId));
      }
      await expectStoredOnce(b.url, new Set([...acknowledged, ...after]));
    } finally {
      await nc.close();
      // The engines serve the next test too.
      if (killed >= 0 && !restarted) await servers[killed]!.restart();
    }
  }, 240_000);

  it('answers 503 with Retry-After, never 500, while PostgreSQL is killed and restarted under ingest, admin calls, dashboard reads and viewers; acknowledges only what it stored and recovers by itself', async () => {
    const random = seededRandom(faultSeed('PostgreSQL restart under traffic'));
    const [a, b] = await twoNodes();
    const campaign = await adminCall(a.url, 'POST', '/v1/campaigns', { name: 'pg restart' });
    expect((await adminCall(a.url, 'POST', '/v1/broadcasts', { id: 'pg-restart', campaignId: campaign.body.id })).status).toBe(201);
    const viewers = await Promise.all([a, b].map(async (node, i) => {
      const viewer = await TestViewer.connect(node.url, { apiKey: CLUSTER_API_KEY, sessionId: `svc_pgrestart${i}`, contentId: 'pg-restart' });
      await viewer.next((m) => m.type === 'welcome', 10_000);
      return viewer;
    }));

    // Traffic of every kind on both nodes, all along; every answer kept.
    const answers: Array<Answer & { path: string; detail?: string }> = [];
    const acknowledged = new Set<string>();
    let traffic = true;
    const requests: Array<[string, string, unknown?]> = [
      ['GET', '/v1/broadcasts'],
      ['POST', '/v1/api-keys', { name: 'during traffic' }],
      ['GET', '/v1/settings'],
      ['GET', '/v1/analytics/overview'],
      ['GET', '/v1/analytics/watching-now'],
      ['GET', '/readyz'],
    ];
    const loop = async (url: string) => {
      while (traffic) {
        const batch = makeBatch(20, () => 'pg');
        const sent = await sendOnce(url, batch);
        answers.push({ path: '/v1/events', ...(sent.ok ? { status: 200, retryAfter: null } : { status: sent.status ?? 0, retryAfter: sent.retryAfter ?? null }) });
        if (sent.ok) for (const e of batch) acknowledged.add(String(e.eventId));
        for (const [method, path, body] of requests) {
          const response = await fetch(`${url}${path}`, {
            method,
            headers: { ...adminHeaders, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
            body: body === undefined ? undefined : JSON.stringify(body),
          }).catch(() => null);
          const text = (await response?.text()) ?? '';
          answers.push({ path, status: response?.status ?? 0, retryAfter: response?.headers.get('retry-after') ?? null, ...(response && response.status >= 500 ? { detail: text.slice(0, 200) } : {}) });
        }
      }
    };
    const loops = Promise.all([loop(a.url), loop(b.url)]);

    await new Promise((resolve) => setTimeout(resolve, 500 + random() * 2_000));
    // The engines serve the next test too: PostgreSQL runs again and the traffic stops, whatever failed.
    let restarted = false;
    try {
      await engines.postgres.kill();
      await until('node A refuses an admin call with 503', async () => (await adminCall(a.url, 'GET', '/v1/broadcasts').catch(() => ({ status: 0 }))).status === 503, 20_000);
      const refused = await fetch(`${a.url}/v1/api-keys`, { method: 'POST', headers: { ...adminHeaders, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'refused' }) });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused.json()) as { code: string }).code).toBe('storage_unavailable');
      // The outage lasts a few seconds, as a restart would.
      await new Promise((resolve) => setTimeout(resolve, 2_000 + random() * 3_000));
      await engines.postgres.restart();
      restarted = true;
      for (const node of [a, b]) await until('readiness back', async () => (await fetch(`${node.url}/readyz`)).status === 200, 30_000);
      expect((await adminCall(b.url, 'POST', '/v1/api-keys', { name: 'after the restart' })).status).toBe(201);
    } finally {
      traffic = false;
      await loops;
      if (!restarted) await engines.postgres.restart();
    }

    const during = answers.filter((x) => x.status === 503);
    console.info(`PostgreSQL restart: ${answers.length} answers, ${during.length} of them 503 (${[...new Set(during.map((x) => x.path))].join(', ')})`);
    expect(during.length).toBeGreaterThan(0);
    // Every answer is a success or a 503 with Retry-After: never a 500, a lost connection, or a
    // storage failure dressed as something else (401, 404, ...).
    expect(answers.filter((x) => !(x.status >= 200 && x.status < 300) && !(x.status === 503 && Number(x.retryAfter) >= 1))).toEqual([]);
    // The viewers stayed connected, and every acknowledged event is stored once.
    for (const viewer of viewers) expect(viewer.ws.readyState).toBe(viewer.ws.OPEN);
    for (const viewer of viewers) viewer.ws.terminate();
    await until('every acknowledged event is readable', async () => {
      const ids = new Set(await exportedIdsNdjson(a.url));
      return [...acknowledged].every((id) => ids.has(id));
    }, STORED_WITHIN_MS, 1_000).catch(() => {});
    const ids = await exportedIdsNdjson(a.url);
    // A batch refused with 503 may have been stored before the refusal (the client sends it again): only repeats and losses are wrong.
    const { repeated, missing } = exportProblems(ids, acknowledged);
    expect(summarized({ repeated, missing })).toEqual({ repeated: 'none', missing: 'none' });
    for (const node of [a, b]) expect(node.output()).not.toMatch(/unhandled|uncaught/i);
  }, 180_000);
});
