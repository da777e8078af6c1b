import { readFileSync } from 'node:fs';
import { startClickHouse, startPostgres } from '@svc/engines';
import { clusterFanoutBenchmark } from './cluster-fanout';
import { historyBenchmark, type HistoryResult } from './cluster-history';
import { clusterIngest, embeddedIngest, eventsPerSecond, type IngestRun } from './cluster-lb-ingest';
import { clusterTable } from './cluster-table';
import { clusterWebhookBurst, embeddedWebhookBurst, type WebhookBurst } from './cluster-webhooks';
import { EVENTS_PER_BATCH, makeBodies } from './events';
import { fmt, type BenchTable } from './report';
import { Receiver } from './webhooks';

export const DEFAULT_CLUSTER_EVENTS = 10_000_000;
export const DEFAULT_CLUSTER_FANOUT_VIEWERS = 3_000;
export const DEFAULT_CLUSTER_WEBHOOK_EVENTS = 20_000;

export interface ClusterOptions {
  /** Ingest: measured and warm-up seconds, client connections, events generated beforehand. */
  seconds: number;
  warmupSeconds: number;
  connections: number;
  poolEvents: number;
  /** Ingest through the load balancer with 1, 2, … up to this many nodes. */
  maxNodes: number;
  /** Viewers of the fan-out with 3 nodes (bench/cluster-fanout.ts, one total). */
  fanoutViewers: number;
  fanoutCycles: number;
  /** Events of the export, deletion and dashboard figures (the 10 million by default). */
  events: number;
  deletions: number;
  dashboardRuns: number;
  webhookEvents: number;
  log: (line: string) => void;
}

/** Every figure of cluster mode in one run, next to the single node's. */
export interface ClusterRun {
  embeddedIngest: IngestRun;
  clusterIngest: IngestRun[];
  fanout: BenchTable;
  webhooks: { embedded: WebhookBurst; cluster: WebhookBurst };
  /** Export, deletion and dashboard at `events`, or why they could not be measured. */
  history: HistoryResult | { error: string };
  loadBefore: string;
  loadAfter: string;
  startedAt: Date;
  endedAt: Date;
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/**
 * `npm run bench -- --only cluster`: one table of cluster mode on this machine, each figure next
 * to the single node's of the same run: ingest through HAProxy with 1…maxNodes nodes (CPU per
 * event of the nodes and of each engine, and the projection to 200,000 events/s), the fan-out
 * with 3 nodes, webhook deliveries from the shared queue, and export, deletion and the dashboard
 * overview on ClickHouse with `events` events.
 */
export async function clusterBenchmark(options: ClusterOptions): Promise<BenchTable> {
  const log = options.log;
  const startedAt = new Date();
  const loadBefore = loadAverage();

  log(`cluster: fan-out, 3 nodes against 1 node, embedded and bare ws, ${fmt.int(options.fanoutViewers)} viewers…`);
  // It starts and stops its own PostgreSQL and ClickHouse.
  const fanout = await clusterFanoutBenchmark({
    totals: [options.fanoutViewers],
    nodes: 3,
    clientProcesses: 2,
    wave: 500,
    cycles: options.fanoutCycles,
    voteRounds: 1,
    embedded: true,
    log,
  });

  log(`cluster: generating ${fmt.int(Math.ceil(options.poolEvents / EVENTS_PER_BATCH) * EVENTS_PER_BATCH)} events for ingest…`);
  const pool = makeBodies(Math.ceil(options.poolEvents / EVENTS_PER_BATCH));
  log('cluster: starting PostgreSQL and ClickHouse…');
  const [postgres, clickhouse] = await Promise.all([startPostgres(), startClickHouse()]);
  const receiver = new Receiver();
  await receiver.start();
  try {
    const ingestOptions = { seconds: options.seconds, warmupSeconds: options.warmupSeconds, connections: options.connections, log };
    log(`cluster: ingest, embedded node (DuckDB), ${options.warmupSeconds} s + ${options.seconds} s…`);
    const embedded = await embeddedIngest(pool, ingestOptions);
    log(`  ${fmt.int(eventsPerSecond(embedded))} events/s`);
    const runs: IngestRun[] = [];
    for (let nodes = 1; nodes <= options.maxNodes; nodes++) {
      log(`cluster: ingest through HAProxy, ${nodes} node(s)…`);
      runs.push(await clusterIngest(nodes, pool, ingestOptions, postgres, clickhouse));
      const run = runs.at(-1)!;
      log(`  ${fmt.int(eventsPerSecond(run))} events/s, failed ${run.load.failedRequests}, not stored ${run.notStored}`);
    }

    log(`cluster: webhooks, embedded dispatcher, burst of ${fmt.int(options.webhookEvents)} events…`);
    const embeddedHooks = await embeddedWebhookBurst(receiver, options.webhookEvents, log);
    log(`  ${fmt.int(embeddedHooks.deliveries / embeddedHooks.seconds)} deliveries/s`);
    log(`cluster: webhooks, shared queue, ${options.maxNodes} nodes…`);
    const clusterHooks = await clusterWebhookBurst(options.maxNodes, receiver, options.webhookEvents, postgres, clickhouse, log);

    // The longest part, last: if it fails, the figures above are still reported.
    const history = await historyBenchmark({ events: options.events, deletions: options.deletions, dashboardRuns: options.dashboardRuns, log }, postgres, clickhouse).catch((error: unknown) => {
      log(`history failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      return { error: error instanceof Error ? error.message : String(error) };
    });
    return clusterTable(options, {
      embeddedIngest: embedded,
      clusterIngest: runs,
      fanout,
      webhooks: { embedded: embeddedHooks, cluster: clusterHooks },
      history,
      loadBefore,
      loadAfter: loadAverage(),
      startedAt,
      endedAt: new Date(),
    });
  } finally {
    await receiver.stop();
    await Promise.allSettled([postgres.stop(), clickhouse.stop()]);
  }
}
