import { uuidv7 } from 'uuidv7';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '@svc/protocol';
import { ChDatabase, ClickHouseEventStore, splitClickHouseUrl, type EventRow } from '@svc/storage';
import { clusterEnginesAvailable, freshClusterPerTest, type ClusterNode } from './cluster-engines';
import { adminCall, exportedCount, exportedIdsNdjson, makeBatch, sendUntilAcknowledged, until, type Batch, exportedOnceProblems, ingestConcurrently, NO_EXPORT_PROBLEMS } from './cluster-client';
import { spawnSvc } from './child-server';
import { faultSeed } from './fault-seed';
import { WebhookReceiver } from './webhook-receiver';

const available = clusterEnginesAvailable();

/** Requests in flight at once. */
const CLIENTS = 4;
/** Short ack waits and deletion lease: what a killed node held comes back to another node within seconds. */
const ACK_WAIT_MS = 3_000;
const DELETION_LEASE_MS = 3_000;
/** How long the writers may take to make every acknowledged event readable. */
const STORED_WITHIN_MS = 60_000;
/** How long the deletion job may take, after the kill, to complete on the other node. */
const COMPLETED_WITHIN_MS = 60_000;
/** How long the work queue may take to deliver every acknowledged event. */
const DELIVERED_WITHIN_MS = 120_000;
/** Retention purge: the node's lives killed during its start-up pass, and the rows each life adds. */
const PURGE_KILLS = 4;
const EXPIRED_PER_LIFE = 60_000;
const OTHER_TENANT_PER_LIFE = 20_000;
const RECENT_PER_LIFE = 50;
/** Rows of a tenant that does not exist: past every retention, in the months of expired rows, never purged. */
const OTHER_TENANT_SEQ = 999_999;
const DAY_MS = 86_400_000;
/** Older than this has expired under the default retention of 12 calendar months (with a margin). */
const expiryCutoffMs = () => Date.now() - 400 * DAY_MS;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A stored poll view of tenant `tenantSeq` at `timestampMs`, as the writer stores it. */
function eventRow(tenantSeq: number, timestampMs: number): EventRow {
  return {
    tenantSeq, eventId: uuidv7(), event: 'poll.viewed', userId: null, sessionId: 'svc_fault', broadcastId: 'retention', campaignId: 1,
    timestampMs, receivedAtMs: timestampMs, country: null, orderId: null, sponsorId: null, total: null, items: null,
    data: '{"pollId":"poll-1","questionText":"Who wins tonight?"}',
  };
}

/**
 * A Svc node killed with SIGKILL in the middle of background work, in full cluster mode
 * (PostgreSQL + NATS + ClickHouse): the work is finished by the other node or by a node started
 * again, and the outcome is read from the outside (exports, the webhook receiver, the jobs' API).
 * When the kill strikes is seeded; the seed is printed: SVC_FAULT_SEED=<seed> replays it.
 */
describe.runIf(available)('a full cluster node killed during background work', () => {
  const { freshCluster, node } = freshClusterPerTest({
    SVC_WRITER_ACK_WAIT_MS: String(ACK_WAIT_MS),
    SVC_WEBHOOK_ACK_WAIT_MS: String(ACK_WAIT_MS),
    SVC_DELETION_LEASE_MS: String(DELETION_LEASE_MS),
    SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  const receiver = new WebhookReceiver();
  beforeAll(() => receiver.start());
  afterAll(() => receiver.stop());
  const kill = async (victim: ClusterNode) => {
    victim.process.kill('SIGKILL');
    await victim.exited;
  };

  /** Sends `batches` through CLIENTS clients, each as the SDK does (`urls()` in turn until acknowledged); the acknowledged ids. */
  const ingest = (batches: Batch[], urls: () => string[], onAcknowledged?: (done: number) => void | Promise<void>) =>
    ingestConcurrently(batches, CLIENTS, (batch) => sendUntilAcknowledged(urls, batch), onAcknowledged);

  /** The export of node `url` (with `query`) holds exactly `expected`, each once. */
  const expectExportedOnce = async (url: string, expected: Set<string>, query = '') => {
    expect(await exportedOnceProblems(url, expected, STORED_WITHIN_MS, query)).toEqual(NO_EXPORT_PROBLEMS);
  };

  it("completes a user's deletion job on the other node after the node running it is SIGKILLed; the export keeps every other event once", async () => {
    const random = seededRandom(faultSeed('node kill during a deletion job'));
    const env = await freshCluster();
    const [a, b] = await Promise.all([node(env), node(env)]);
    const victim = 'erase-me';
    // The user's events, acknowledged and readable before the request.
    const erased = await ingest(Array.from({ length: 4 }, () => makeBatch(250, () => victim)), () => [a.url, b.url]);
    await until("the user's events are readable", async () => (await exportedCount(b.url, `&userId=${victim}`)) === erased.size, STORED_WITHIN_MS, 500);

    // Other users' events go on being sent while the job runs and its node dies.
    const requestAfter = 3 + Math.floor(random() * 10);
    // The job (waiting for the writer, then three deletions in ClickHouse) takes about a second here.
    const killDelayMs = random() * 600;
    let aAlive = true;
    let jobId = '';
    let statusAtKill = '';
    const others = await ingest(Array.from({ length: 40 }, (_, i) => makeBatch(250, (j) => `keep-${(i + j) % 13}`)), () => (aAlive ? [a.url, b.url] : [b.url]), async (done) => {
      if (done !== requestAfter) return;
      // Asked of node A, whose worker claims the job at once.
      const requested = await adminCall(a.url, 'DELETE', `/v1/users/${victim}/events`);
      expect(requested.status).toBe(202);
      jobId = String(requested.body.id);
      await until('the job runs', async () => (await adminCall(b.url, 'GET', `/v1/deletions/${jobId}`)).body.status !== 'pending', 10_000, 10);
      await sleep(killDelayMs);
      await kill(a);
      aAlive = false;
      statusAtKill = String((await adminCall(b.url, 'GET', `/v1/deletions/${jobId}`)).body.status);
    });
    expect(aAlive).toBe(false);

    await until('the deletion job completes', async () => {
      const job = await adminCall(b.url, 'GET', `/v1/deletions/${jobId}`);
      expect(job.body.status).not.toBe('failed');
      return job.body.status === 'completed';
    }, COMPLETED_WITHIN_MS, 250);
    expect(await exportedIdsNdjson(b.url, `&userId=${victim}`)).toEqual([]);
    // Every other acknowledged event once, and none of the user's.
    await expectExportedOnce(b.url, others);
    console.info(`deletion kill: job ${statusAtKill} at the kill (${Math.round(killDelayMs)} ms after it was claimed); ${erased.size} of the user's events, ${others.size} others kept`);
  }, 240_000);

  it('delivers every acknowledged event at least once, signed, after the dispatching node is SIGKILLed mid-flow', async () => {
    const seed = faultSeed('node kill during webhook dispatch');
    const random = seededRandom(seed);
    // The receiver's delays, drawn concurrently, from a stream of their own.
    const receiverDelay = seededRandom(seed + 1);
    receiver.received.length = 0;
    // A receiver that takes a moment keeps deliveries in flight when the kill comes.
    receiver.respond = (res) => void setTimeout(() => res.writeHead(200).end(), 5 + receiverDelay() * 45);
    const env = await freshCluster();
    const [a, b] = await Promise.all([node(env), node(env)]);
    const created = await adminCall(a.url, 'POST', '/v1/webhooks', { url: receiver.url });
    expect(created.status).toBe(201);
    const secret = String(created.body.secret);
    // Both nodes must know the endpoint before events are sent (B hears of it through PostgreSQL).
    await until('node B lists the endpoint', async () => ((await adminCall(b.url, 'GET', '/v1/webhooks')).body.data as unknown[] | undefined)?.length === 1, 10_000, 100);

    const killAt = 100 + Math.floor(random() * 900);
    let aAlive = true;
    const killing = (async () => {
      await until('deliveries are flowing', () => receiver.received.length >= killAt, 60_000, 5);
      await kill(a);
      aAlive = false;
    })();
    const acknowledged = await ingest(Array.from({ length: 30 }, (_, i) => makeBatch(100, (j) => `hook-${(i + j) % 7}`)), () => (aAlive ? [a.url, b.url] : [b.url]));
    await killing;

    await until('the receiver got every acknowledged event', () => {
      const received = new Set(receiver.ids());
      return [...acknowledged].every((id) => received.has(id));
    }, DELIVERED_WITHIN_MS, 500).catch(() => {});
    const verifier = new Webhook(secret);
    const delivered = new Set<string>();
    for (const request of receiver.received) {
      const payload = verifier.verify(request.body, request.headers as Record<string, string>) as { eventId: string };
      // Copies of one delivery share its webhook-id: the receiver recognises them.
      expect(request.headers['webhook-id']).toBe(payload.eventId);
      delivered.add(payload.eventId);
    }
    expect({ missing: [...acknowledged].filter((id) => !delivered.has(id)).length, unexpected: [...delivered].filter((id) => !acknowledged.has(id)).length }).toEqual({ missing: 0, unexpected: 0 });
    console.info(`webhook kill after ${killAt} deliveries: ${receiver.received.length} requests for ${acknowledged.size} events (${receiver.received.length - delivered.size} sent again)`);
  }, 240_000);

  it('purges every expired event and keeps every recent one once after SIGKILLs during the start-up retention purge, once a node starts again', async () => {
    const random = seededRandom(faultSeed('node kill during the retention purge'));
    const env = await freshCluster();
    // The first node creates the schema and the tenant; a marker event says the tenant's number.
    const first = await node(env);
    const marker = makeBatch(1, () => 'marker');
    await sendUntilAcknowledged(() => [first.url], marker);
    await until('the marker is readable', async () => (await exportedCount(first.url)) === 1, STORED_WITHIN_MS, 250);
    first.process.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const { serverUrl, database } = splitClickHouseUrl(env.SVC_CLICKHOUSE_URL!);
    const db = await ChDatabase.open(serverUrl, database);
    try {
      const [{ tenant_seq: tenantSeq }] = (await db.query<{ tenant_seq: number }>('SELECT tenant_seq FROM events LIMIT 1')) as [{ tenant_seq: number }];
      const store = new ClickHouseEventStore(db);
      const kept = new Set<string>([String(marker[0]!.eventId)]);
      const expiredLeft = async () => Number((await db.query<{ n: string }>(`SELECT count() AS n FROM events FINAL WHERE tenant_seq = ${Number(tenantSeq)} AND timestamp_ms < ${expiryCutoffMs()}`))[0]?.n);
      const otherTenantRows = async () => Number((await db.query<{ n: string }>(`SELECT count() AS n FROM events FINAL WHERE tenant_seq = ${OTHER_TENANT_SEQ}`))[0]?.n);
      /** Adds expired rows over 24 months (every other month shared with another tenant, so that the purge both drops partitions and rewrites parts) and recent ones. */
      const addRows = async () => {
        const monthAgo = (k: number) => Date.now() - (14 + k) * 31 * DAY_MS;
        const expired = Array.from({ length: EXPIRED_PER_LIFE }, (_, i) => eventRow(tenantSeq, monthAgo(i % 24) - (i % 1000) * 1_000));
        const otherTenant = Array.from({ length: OTHER_TENANT_PER_LIFE }, (_, i) => eventRow(OTHER_TENANT_SEQ, monthAgo(2 * (i % 12))));
        const recent = Array.from({ length: RECENT_PER_LIFE }, (_, i) => eventRow(tenantSeq, Date.now() - i * 60_000));
        for (const rows of [expired, otherTenant, recent]) await store.commit({ events: rows, rejects: [] });
        for (const e of recent) kept.add(e.eventId);
      };

      // How long the purge at start lasts here without a kill, from its first sign (the first
      // months dropped) to its end: each kill falls in such a span.
      await addRows();
      let otherRows = await otherTenantRows();
      const expiredAdded = await expiredLeft();
      const spawnedAt = Date.now();
      const measuring = node(env);
      await until('the purge at start begins', async () => (await expiredLeft()) < expiredAdded, 60_000, 10);
      const purgeBeganMs = Date.now() - spawnedAt;
      await until('the purge at start is done', async () => (await expiredLeft()) === 0, 120_000, 10);
      const purgeEndedMs = Date.now() - spawnedAt;
      const measured = await measuring;
      measured.process.kill('SIGTERM');
      expect(await measured.exited).toBe(0);

      const atKill = { partly: 0, done: 0 };
      // The span the kills fall in: halved after a kill that came too late (a pass is quicker on a warm server).
      let killWithinMs = purgeEndedMs - purgeBeganMs;
      for (let life = 0; life < PURGE_KILLS; life++) {
        await addRows();
        otherRows = await otherTenantRows();
        const expiredBefore = await expiredLeft();
        // A node of its own, spawned without waiting for it to listen: the purge starts before it does.
        const child = await spawnSvc(['serve'], { SVC_DATA_DIR: measured.dataDir, ...env });
        const exited = new Promise((resolve) => child.once('exit', resolve));
        // Start-up times vary more than the purge lasts: the kill is timed from this life's first sign of the purge.
        await until('the purge at start begins', async () => (await expiredLeft()) < expiredBefore, 60_000, 10);
        await sleep(random() * killWithinMs);
        child.kill('SIGKILL');
        await exited;
        // A deletion the killed node started goes on in ClickHouse: this is the state just after the kill.
        const left = await expiredLeft();
        atKill[left === 0 ? 'done' : 'partly']++;
        if (left === 0) killWithinMs /= 2;
        // Whatever the moment, nothing kept went, nor another tenant's rows.
        const stored = new Set((await db.query<{ event_id: string }>(`SELECT toString(event_id) AS event_id FROM events FINAL WHERE tenant_seq = ${Number(tenantSeq)} AND timestamp_ms >= ${expiryCutoffMs()}`)).map((row) => row.event_id));
        expect([...kept].filter((id) => !stored.has(id))).toEqual([]);
        expect(await otherTenantRows()).toBe(otherRows);
      }

      // A node started again finishes the purge.
      const again = await node(env);
      await until('every expired event is gone', async () => (await exportedCount(again.url, `&to=${new Date(expiryCutoffMs()).toISOString()}`)) === 0, 120_000, 500);
      await expectExportedOnce(again.url, kept);
      expect(await otherTenantRows()).toBe(otherRows);
      // Nor are their ids left for the writer's duplicate lookup (a kill between the events and their ids leaves them to the next pass).
      await until('the expired ids are gone', async () => Number((await db.query<{ n: string }>(`SELECT count() AS n FROM event_ids WHERE tenant_seq = ${Number(tenantSeq)} AND timestamp_ms < ${expiryCutoffMs()}`))[0]?.n) === 0, 30_000, 500);
      console.info(`retention purge kills: the purge ran from ${purgeBeganMs} to ${purgeEndedMs} ms after the spawn; at the ${PURGE_KILLS} kills it was ${JSON.stringify(atKill)}; ${kept.size} recent events kept`);
    } finally {
      await db.close();
    }
  }, 300_000);
});
