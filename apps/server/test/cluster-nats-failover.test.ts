import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsServer } from '../../../packages/storage/test/nats-server';
import type { ChildServer } from './child-server';
import { adminCall, exportedIdsNdjson, makeBatch, until } from './cluster-client';
import { CLUSTER_API_KEY, clusterEnginesAvailable, natsServerOf, startClusterEngines, startClusterNode, type ClusterEngines } from './cluster-engines';
import { TestViewer } from './ws-client';

const available = clusterEnginesAvailable();

/** How often node A's API changes the overlay (each change numbered). */
const SHOW_INTERVAL_MS = 200;
/** How often each node is sent a batch of events. */
const INGEST_INTERVAL_MS = 200;
const EVENTS_PER_BATCH = 5;
/**
 * How soon after a NATS server dies or hangs its nodes' fan-out must resume on a busy machine: a
 * hung server is given up after NATS_PING_INTERVAL_MS × (NATS_MAX_PINGS_OUT + 1) = 6 s, then
 * the client dials a live one (`serverToDial`).
 */
const RESUMES_WITHIN_MS = 10_000;
/** Viewers of node B. */
const VIEWERS = 3;

interface Received {
  seq: number;
  at: number;
}

describe.runIf(available)('one NATS server of three dies: fan-out between nodes resumes once their clients fail over', () => {
  let engines: ClusterEngines;
  let servers: NatsServer[];
  let a: ChildServer;
  let b: ChildServer;

  beforeAll(async () => {
    engines = await startClusterEngines({ natsNodes: 3 });
    servers = engines.natsCluster!.nodes;
    const env = await engines.clusterEnv();
    a = await startClusterNode(env, { SVC_NODE_ID: 'failover-a' });
    // Node B on another server than node A's: its list leaves A's out (it learns it from the cluster).
    const serverOfA = await natsServerOf(servers, 'failover-a');
    expect(serverOfA).toBeGreaterThanOrEqual(0);
    b = await startClusterNode(env, { SVC_NODE_ID: 'failover-b', SVC_NATS_URL: servers.filter((_, i) => i !== serverOfA).map((s) => s.url).join(',') });
  }, 120_000);
  afterAll(async () => {
    for (const node of [a, b]) {
      if (!node) continue;
      node.process.kill('SIGTERM');
      await node.exited;
    }
    await engines?.stop();
  });

  const call = (node: ChildServer, method: string, path: string, body?: unknown) => adminCall(node.url, method, path, body);

  it("keeps showing node A's overlay changes on node B's viewers after the NATS server of B, then of A, is killed, and after A's hangs; ingest answers 2xx or 503 meanwhile and loses nothing acknowledged", async () => {
    const campaign = await call(a, 'POST', '/v1/campaigns', { name: 'failover' });
    expect((await call(a, 'POST', '/v1/broadcasts', { id: 'failover', campaignId: campaign.body.id })).status).toBe(201);
    const created = await call(a, 'POST', '/v1/broadcasts/failover/overlays', { type: 'lineup', items: [{ title: '0' }] });
    const overlayId = String(created.body.id);
    expect((await call(a, 'POST', `/v1/broadcasts/failover/overlays/${overlayId}/show`)).status).toBe(200);

    const received: Received[][] = [];
    const viewers: TestViewer[] = [];
    for (let i = 0; i < VIEWERS; i++) {
      const viewer = await TestViewer.connect(b.url, { apiKey: CLUSTER_API_KEY, sessionId: `svc_failover${i}`, contentId: 'failover' });
      await viewer.next((m) => m.type === 'welcome', 10_000);
      const mine: Received[] = [];
      viewer.ws.on('message', (data) => {
        const message = JSON.parse(String(data)) as { type: string; overlay?: { items?: Array<{ title: string }> } };
        if (message.type === 'overlay.update') mine.push({ seq: Number(message.overlay?.items?.[0]?.title), at: Date.now() });
      });
      viewers.push(viewer);
      received.push(mine);
    }

    // Node A's API changes the overlay every SHOW_INTERVAL_MS, each change numbered.
    let running = true;
    const sentAt = new Map<number, number>();
    const showStatuses: number[] = [];
    const shows = (async () => {
      for (let seq = 1; running; seq++) {
        const started = Date.now();
        sentAt.set(seq, started);
        showStatuses.push((await call(a, 'PATCH', `/v1/broadcasts/failover/overlays/${overlayId}`, { type: 'lineup', items: [{ title: String(seq) }] })).status);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, SHOW_INTERVAL_MS - (Date.now() - started))));
      }
    })();
    // Both nodes ingest all along; what each answered, and the events acknowledged.
    const answers: Array<{ node: string; status: number; retryAfter: string | null }> = [];
    const acknowledged: string[] = [];
    const ingest = async (node: ChildServer, name: string) => {
      while (running) {
        const batch = makeBatch(EVENTS_PER_BATCH, (i) => `failover-user-${i}`);
        try {
          const response = await fetch(`${node.url}/v1/events`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-svc-api-key': CLUSTER_API_KEY },
            body: JSON.stringify({ sentAt: new Date().toISOString(), events: batch }),
            signal: AbortSignal.timeout(30_000),
          });
          await response.text();
          answers.push({ node: name, status: response.status, retryAfter: response.headers.get('retry-after') });
          if (response.status === 200) acknowledged.push(...batch.map((event) => String(event.eventId)));
        } catch (error) {
          answers.push({ node: name, status: 0, retryAfter: String(error) });
        }
        await new Promise((resolve) => setTimeout(resolve, INGEST_INTERVAL_MS));
      }
    };
    const ingests = Promise.all([ingest(a, 'A'), ingest(b, 'B')]);

    const lastSent = () => Math.max(0, ...sentAt.keys());
    const resumed = (since: number) => received.every((mine) => mine.some((r) => r.seq > since));
    const failOver = async (which: 'A' | 'B', fault: 'killed' | 'frozen') => {
      const index = await natsServerOf(servers, which === 'A' ? 'failover-a' : 'failover-b');
      expect(index).toBeGreaterThanOrEqual(0);
      await until('changes flow before the kill', () => resumed(lastSent() - 10), 10_000, 50);
      const killedAt = Date.now();
      const lastBefore = lastSent();
      if (fault === 'killed') await servers[index]!.kill();
      else await servers[index]!.freeze();
      await until(`fan-out resumes after the NATS server of node ${which} was ${fault}`, () => resumed(lastSent() > lastBefore + 1 ? lastBefore + 1 : Infinity), RESUMES_WITHIN_MS, 20);
      const resumedAt = Date.now();
      // Let the flow settle, then see what the viewers missed.
      await until('a few more changes', () => resumed(lastSent() - 1) && lastSent() > lastBefore + 10, 10_000, 50);
      const window = [...sentAt].filter(([seq, at]) => seq > lastBefore - 5 && at < resumedAt).map(([seq]) => seq);
      const lost = received.map((mine) => window.filter((seq) => !mine.some((r) => r.seq === seq)));
      const longestSilence = Math.max(
        ...received.map((mine) => {
          const times = mine.filter((r) => r.at >= killedAt - SHOW_INTERVAL_MS * 5).map((r) => r.at);
          return Math.max(0, ...times.slice(1).map((at, i) => at - times[i]!));
        }),
      );
      console.info(
        `NATS server of node ${which} ${fault}: fan-out resumed after ${resumedAt - killedAt} ms; ` +
          `lost per viewer ${lost.map((l) => l.length).join('/')} changes (≈ ${Math.max(...lost.map((l) => l.length)) * SHOW_INTERVAL_MS} ms of changes at one per ${SHOW_INTERVAL_MS} ms); ` +
          `longest silence on a viewer ${longestSilence} ms`,
      );
      if (fault === 'killed') await servers[index]!.restart();
      else servers[index]!.thaw();
    };
    try {
      await failOver('B', 'killed');
      await failOver('A', 'killed');
      await failOver('A', 'frozen');
    } finally {
      for (const server of servers) server.thaw();
      running = false;
      await Promise.all([shows, ingests]);
    }

    expect(new Set(showStatuses)).toEqual(new Set([200]));
    const refused = answers.filter((answer) => !(answer.status >= 200 && answer.status < 300) && !(answer.status === 503 && Number(answer.retryAfter) >= 1));
    expect(refused).toEqual([]);
    console.info(`ingest answers: ${answers.filter((x) => x.status === 200).length} acknowledged, ${answers.filter((x) => x.status === 503).length} 503 with Retry-After`);
    // Every acknowledged event is stored.
    await until('every acknowledged event is exported', async () => {
      const stored = new Set(await exportedIdsNdjson(a.url));
      return acknowledged.every((id) => stored.has(id));
    }, 60_000, 1_000);
    // The viewers stayed connected throughout.
    for (const viewer of viewers) expect(viewer.ws.readyState).toBe(viewer.ws.OPEN);
  }, 180_000);
});
