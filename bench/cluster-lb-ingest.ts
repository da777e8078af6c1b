import { loadavg } from 'node:os';
import { request } from 'undici';
import type { ClickHouseServer, PostgresServer } from '@svc/engines';
import { CountingBodies } from './cluster-ingest';
import { EVENTS_PER_BATCH } from './events';
import { FreshTimestampBodies } from './fresh-timestamp-bodies';
import { base62, metric, UniqueBodies } from './ingest';
import { runLoad, type LoadResult } from './load';
import { running, startLbCluster } from './lb-cluster';
import { cpuSeconds, startService, tempFolder, type Child } from './processes';

/** How long the events a run acknowledged have to reach ClickHouse before the missing ones count as errors. */
const STORED_WAIT_MS = 90_000;

export interface LbIngestOptions {
  seconds: number;
  warmupSeconds: number;
  connections: number;
  log: (line: string) => void;
}

/** CPU cores (CPU seconds per second of the measured window) of each part of a run. */
export interface IngestCores {
  /** Each Svc node, whole process. */
  nodes: number[];
  /** Each Svc node's main thread (the event loop: what one node cannot spread over cores). */
  mainThreads: number[];
  /** Events each node accepted per second (its svc_events_accepted_total), to cost each node's own events. */
  nodeEventsPerSecond: number[];
  nats: number;
  clickhouse: number;
  postgres: number;
  haproxy: number;
  client: number;
}

export interface IngestRun {
  /** Svc nodes behind the load balancer; 0 for the embedded node asked directly. */
  nodes: number;
  load: LoadResult;
  cores: IngestCores;
  /** Events acknowledged over the whole run (warm-up included) and not in ClickHouse after STORED_WAIT_MS. */
  notStored: number;
  loadAverage: number;
}

export const eventsPerSecond = (run: IngestRun) => run.load.events / run.load.seconds;
/** CPU µs per acknowledged event of `cores` (cores ÷ events/s). */
export const microsPerEvent = (run: IngestRun, cores: number) => (cores / eventsPerSecond(run)) * 1e6;

/** Events a node has accepted so far (its own counter: behind HAProxy each node takes a share). */
async function acceptedEvents(node: Child): Promise<number> {
  const response = await request(`${node.url}/metrics`);
  return metric(await response.body.text(), 'svc_events_accepted_total');
}

/** CPU seconds so far of a changing set of processes (PostgreSQL's backends come and go), by pid. */
function cpuByPid(pids: number[]): Map<number, number> {
  return new Map(pids.map((pid) => [pid, cpuSeconds(pid) || 0]));
}

/** CPU seconds between two samples: a process missing from the first started in between. */
function cpuBetween(start: Map<number, number>, end: Map<number, number>): number {
  let sum = 0;
  for (const [pid, seconds] of end) sum += seconds - (start.get(pid) ?? 0);
  return sum;
}

interface Sampled {
  nodes: Child[];
  pids: () => { nats: number[]; clickhouse: number[]; postgres: number[]; haproxy: number[] };
}

/** The load run, with every process's CPU sampled at the edges of the measured window. */
async function measure(origin: string, apiKey: string, bodies: CountingBodies, options: LbIngestOptions, sampled: Sampled): Promise<{ load: LoadResult; cores: IngestCores }> {
  const sample = async () => {
    const accepted = await Promise.all(sampled.nodes.map((node) => acceptedEvents(node)));
    const pids = sampled.pids();
    return {
      accepted,
      nodes: sampled.nodes.map((node) => cpuSeconds(node.pid)),
      mains: sampled.nodes.map((node) => cpuSeconds(node.pid, node.pid)),
      nats: cpuByPid(pids.nats),
      clickhouse: cpuByPid(pids.clickhouse),
      postgres: cpuByPid(pids.postgres),
      haproxy: cpuByPid(pids.haproxy),
    };
  };
  let at0 = await sample();
  let at1 = at0;
  const load = await runLoad({
    origin,
    path: '/v1/events',
    headers: { 'x-svc-api-key': apiKey },
    bodies,
    connections: options.connections,
    warmupMs: options.warmupSeconds * 1000,
    measureMs: options.seconds * 1000,
    onWindow: async (edge) => {
      if (edge === 'start') at0 = await sample();
      else at1 = await sample();
    },
  });
  for (const node of sampled.nodes) if (node.exitCode() !== 'running') throw new Error(`a node exited during the run:\n${node.output()}`);
  const s = load.seconds;
  return {
    load,
    cores: {
      nodes: at1.nodes.map((cpu, i) => (cpu - at0.nodes[i]!) / s),
      mainThreads: at1.mains.map((cpu, i) => (cpu - at0.mains[i]!) / s),
      nodeEventsPerSecond: at1.accepted.map((n, i) => (n - at0.accepted[i]!) / s),
      nats: cpuBetween(at0.nats, at1.nats) / s,
      clickhouse: cpuBetween(at0.clickhouse, at1.clickhouse) / s,
      postgres: cpuBetween(at0.postgres, at1.postgres) / s,
      haproxy: cpuBetween(at0.haproxy, at1.haproxy) / s,
      client: load.clientCpuSeconds / s,
    },
  };
}

/** The single-node baseline of the same run: `svc serve` embedded (DuckDB), asked directly, same client and bodies. */
export async function embeddedIngest(pool: Buffer[], options: LbIngestOptions): Promise<IngestRun> {
  const folder = tempFolder('svc-bench-cluster-embedded-');
  const apiKey = `svc_pk_${base62(32)}`;
  const node = await startService(folder.path, { SVC_BOOTSTRAP_API_KEY: apiKey, SVC_BOOTSTRAP_ADMIN_TOKEN: `svc_sk_${base62(32)}` });
  try {
    const loadAverage = loadavg()[0]!;
    const bodies = new CountingBodies(new FreshTimestampBodies(new UniqueBodies(pool)));
    const none = { nats: [], clickhouse: [], postgres: [], haproxy: [] };
    const { load, cores } = await measure(node.url, apiKey, bodies, options, { nodes: [node], pids: () => none });
    return { nodes: 0, load, cores, notStored: 0, loadAverage };
  } finally {
    await node.stop();
    folder.remove();
  }
}

/**
 * Ingest through HAProxy in front of `nodeCount` Svc nodes in full cluster mode, as `npm run
 * cluster` runs them (bench/lb-cluster.ts). After the load, waits until every acknowledged event
 * is in ClickHouse (what is missing then is an error).
 */
export async function clusterIngest(nodeCount: number, pool: Buffer[], options: LbIngestOptions, postgres: PostgresServer, clickhouse: ClickHouseServer): Promise<IngestRun> {
  const cluster = await startLbCluster(nodeCount, postgres, clickhouse);
  try {
    const loadAverage = loadavg()[0]!;
    const bodies = new CountingBodies(new FreshTimestampBodies(new UniqueBodies(pool)));
    const { load, cores } = await measure(cluster.url, cluster.apiKey, bodies, options, {
      nodes: cluster.nodes,
      pids: () => ({
        nats: running(cluster.nats.nodes.map((server) => server.pid())),
        clickhouse: running([clickhouse.pid()]),
        postgres: postgres.pids(),
        haproxy: running([cluster.balancer.pid()]),
      }),
    });
    const acknowledged = (bodies.handedOut - load.failedRequests) * EVENTS_PER_BATCH;
    const deadline = performance.now() + STORED_WAIT_MS;
    let stored = 0;
    while (performance.now() < deadline) {
      const [row] = await cluster.events.query<{ n: string }>('SELECT count() AS n FROM events FINAL');
      stored = Number(row?.n ?? 0);
      if (stored >= acknowledged) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    return { nodes: nodeCount, load, cores, notStored: Math.max(0, acknowledged - stored), loadAverage };
  } finally {
    await cluster.stop();
  }
}
