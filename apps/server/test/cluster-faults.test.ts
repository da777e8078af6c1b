import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '@svc/protocol';
import { EVENTS_STREAM, WRITER_CONSUMER } from '@svc/storage';
import { clusterEnginesAvailable, freshClusterPerTest, type ClusterNode } from './cluster-engines';
import { adminHeaders, BATCH_SIZE, makeBatch, sendUntilAcknowledged, until, type Batch, exportedOnceProblems, ingestConcurrently, NO_EXPORT_PROBLEMS } from './cluster-client';
import { faultSeed } from './fault-seed';

const available = clusterEnginesAvailable();

/** Requests in flight at once. */
const CLIENTS = 6;
/** How long ClickHouse stays away. */
const CLICKHOUSE_OUTAGE_MS = 60_000;
/**
 * The writers' ack wait here: a dead writer's messages come back to another writer after it
 * (a minute by default), so a short one makes the recovery, not the faults, quicker.
 */
const WRITER_ACK_WAIT_MS = 5_000;
/** How long the writers may take, after the fault, to make every acknowledged event readable. */
const STORED_WITHIN_MS = 40_000;


/**
 * Faults of a full cluster while clients ingest. After recovery the export must hold every
 * acknowledged event once, and nothing that was never sent. Where chance decides (when the
 * fault strikes), the seed is printed: SVC_FAULT_SEED=<seed> replays it.
 */
describe.runIf(available)('a full cluster under faults', () => {
  const { engines, nats, freshCluster, node } = freshClusterPerTest({ SVC_WRITER_ACK_WAIT_MS: String(WRITER_ACK_WAIT_MS) });

  /** Sends `batches` through CLIENTS clients, each as the SDK does (`urls()` in turn until acknowledged); the acknowledged ids. */
  const ingest = (batches: Batch[], urls: () => string[], onAcknowledged?: (done: number) => void | Promise<void>) =>
    ingestConcurrently(batches, CLIENTS, (batch) => sendUntilAcknowledged(urls, batch), onAcknowledged);

  /** Every acknowledged event readable through `url` once, and nothing else (every batch is sent until acknowledged). */
  const expectStoredOnce = async (url: string, acknowledged: Set<string>) => {
    expect(await exportedOnceProblems(url, acknowledged, STORED_WITHIN_MS)).toEqual(NO_EXPORT_PROBLEMS);
  };

  const batchesOf = (count: number, label: string) => Array.from({ length: count }, (_, i) => makeBatch(BATCH_SIZE, (j) => `${label}-${(i + j) % 11}`));

  it('starts a node whose NATS server is not up yet: it keeps trying, then serves once NATS is there', async () => {
    const env = await freshCluster();
    await nats()!.kill();
    let printed = '';
    const starting = node(env, {}, { onOutput: (text) => void (printed += text) });
    // The node tries again while NATS is away (the start-up allows a minute), then starts.
    await until('the node says it tries again', () => printed.includes('Trying again in'), 30_000, 100);
    await nats()!.restart();
    const started = await starting;
    const answer = await sendUntilAcknowledged(() => [started.url], makeBatch(BATCH_SIZE, () => 'startup'));
    expect(answer.rejected).toEqual([]);
  }, 90_000);

  it('loses and doubles nothing when a node is SIGKILLed mid-ingest and its clients retry on the other node', async () => {
    const random = seededRandom(faultSeed('node kill mid-ingest'));
    const env = await freshCluster();
    const [a, b] = await Promise.all([node(env), node(env)]);
    const killAfter = 5 + Math.floor(random() * 40);
    let aAlive = true;
    const acknowledged = await ingest(batchesOf(80, 'kill'), () => (aAlive ? [a.url, b.url] : [b.url]), async (done) => {
      if (done !== killAfter) return;
      a.process.kill('SIGKILL');
      await a.exited;
      aAlive = false;
    });
    expect(aAlive).toBe(false);
    await expectStoredOnce(b.url, acknowledged);
  }, 180_000);

  it(`loses and doubles nothing when ClickHouse is killed for ${CLICKHOUSE_OUTAGE_MS / 1000} s mid-ingest: ingest goes on, the writers catch up`, async () => {
    const random = seededRandom(faultSeed('ClickHouse outage mid-ingest'));
    const env = await freshCluster();
    const [a, b] = await Promise.all([node(env), node(env)]);
    const killAfter = 3 + Math.floor(random() * 20);
    let outage: Promise<void> | null = null;
    // Reads need ClickHouse: while it is away they are refused with 503 and Retry-After, never 500.
    const reads: Array<{ status: number; retryAfter: string | null; code?: string }> = [];
    let readsDuringOutage: Promise<void> | null = null;
    const readWhileDown = async () => {
      while (down) {
        for (const n of [a, b]) {
          const response = await fetch(`${n.url}/v1/analytics/events?format=ndjson&limit=10`, { headers: adminHeaders }).catch(() => null);
          if (!response) continue;
          const text = await response.text();
          if (down) reads.push({ status: response.status, retryAfter: response.headers.get('retry-after'), code: response.status === 200 ? undefined : (JSON.parse(text) as { code?: string }).code });
        }
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
    };
    let acknowledgedDuringOutage = 0;
    let down = false;
    const batches = batchesOf(60, 'ch');
    const acknowledged = await ingest(batches, () => [a.url, b.url], async (done) => {
      if (down) acknowledgedDuringOutage++;
      if (done !== killAfter) return;
      await engines().clickhouse.kill();
      down = true;
      readsDuringOutage = readWhileDown();
      outage = (async () => {
        await new Promise((resolve) => setTimeout(resolve, CLICKHOUSE_OUTAGE_MS));
        down = false;
        await engines().clickhouse.restart();
      })();
      // The rest of the batches are sent during the outage, a few at a time.
      await new Promise((resolve) => setTimeout(resolve, random() * 1_000));
    });
    await outage;
    await readsDuringOutage;
    // JetStream is the acknowledgement point: ingest does not need ClickHouse.
    expect(acknowledgedDuringOutage).toBeGreaterThan(0);
    expect(reads.filter((read) => read.status === 503).length).toBeGreaterThan(0);
    // A read that was already answered when ClickHouse went may have been 200; every other one is a 503 with Retry-After.
    expect(reads.filter((read) => read.status !== 200 && !(read.status === 503 && Number(read.retryAfter) >= 1 && read.code === 'storage_unavailable'))).toEqual([]);
    await expectStoredOnce(b.url, acknowledged);
    await expectStoredOnce(a.url, acknowledged);
    for (const n of [a, b]) expect(n.process.exitCode).toBeNull();
  }, 240_000);

  it('loses and doubles nothing when the node writing is SIGKILLed mid-insert; another node takes over its messages', async () => {
    const random = seededRandom(faultSeed('writer kill mid-insert'));
    const env = await freshCluster();
    // Alone, node A is the only writer.
    const a = await node(env);
    const nc = await connect({ servers: env.SVC_NATS_URL });
    try {
      const jsm = await jetstreamManager(nc);
      const holding = async () => {
        const info = await jsm.consumers.info(EVENTS_STREAM, WRITER_CONSUMER).catch(() => null);
        return (info?.num_ack_pending ?? 0) > 0;
      };
      const batches = batchesOf(120, 'writer');
      const killAfter = 20 + Math.floor(random() * 60);
      let killed = false;
      // Sent after the kill: through node B, started once A is dead.
      let b: ClusterNode | null = null;
      const acknowledged = await ingest(batches, () => (b ? [b.url] : [a.url]), async (done) => {
        if (done !== killAfter) return;
        // The kill comes while the writer holds fetched messages not acknowledged yet (inserting).
        await until('the writer holds messages', holding, 20_000, 5);
        a.process.kill('SIGKILL');
        await a.exited;
        killed = true;
        b = await node(env);
      });
      expect(killed).toBe(true);
      await expectStoredOnce(b!.url, acknowledged);
    } finally {
      await nc.close();
    }
  }, 240_000);
});
