import { readFileSync } from 'node:fs';
import { startClickHouse } from '../packages/storage/test/clickhouse-server';
import { startNats, type NatsServer } from '../packages/storage/test/nats-server';
import { startPostgres, type PostgresServer } from '../packages/storage/test/postgres-server';
import { clusterFanoutTable } from './cluster-fanout-table';
import { startClusterTarget } from './cluster-target';
import { childPids, totalCpuSeconds } from './engine-cpu';
import { Side, type FanoutOptions, type TargetRun } from './fanout-side';
import { startBaselineTarget, startEmbeddedTarget, syntheticShowFrame } from './fanout-targets';
import { base62 } from './ingest';
import { NatsBusCounter } from './nats-bus-counter';
import type { BenchTable } from './report';

export { TARGET_P99_VS_ONE_NODE } from './cluster-fanout-table';
export const DEFAULT_CLUSTER_TOTALS = [3_000, 9_000];
/** With no overlay change and no vote: what the bus carries by itself (the nodes' viewer counts). */
const IDLE_WINDOW_MS = 5_000;

export interface ClusterFanoutOptions {
  /** Total viewers of each run; every run starts fresh clusters. */
  totals: number[];
  /** Nodes of the cluster measured against one node. */
  nodes: number;
  /** Client processes per side (each side: the cluster, one node, the embedded node, bare ws). */
  clientProcesses: number;
  wave: number;
  cycles: number;
  voteRounds: number;
  /** Also measure the embedded single node (DuckDB, no bus). */
  embedded: boolean;
  log: (line: string) => void;
}

/** One total's runs of every side. */
export interface ClusterFanoutRun {
  viewers: number;
  cluster: TargetRun;
  oneNode: TargetRun;
  embedded?: TargetRun;
  baseline: TargetRun;
  /** Bus messages per topic per second while nothing happened (cluster, then the one node). */
  idlePerSecond: { cluster: Map<string, number>; oneNode: Map<string, number> };
  /** Largest payload seen per topic on the cluster's bus, bytes. */
  largestBytes: Map<string, number>;
  /** CPU of the cluster's nats-server over the alternating cycles, seconds, and how long they took. */
  natsCpuSeconds: number;
  cyclesSeconds: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/**
 * The fan-out across nodes: `nodes` Svc nodes in full cluster mode with the viewers spread over
 * them in turn, against one node in full cluster mode (the same engines, so the difference is
 * the bus hop), the embedded node, and bare `ws`, all with the same total viewers, their cycles
 * alternating; for each total of `totals`, with fresh clusters. Counts the bus messages per
 * overlay change at the cluster's NATS server.
 */
export async function clusterFanoutBenchmark(options: ClusterFanoutOptions): Promise<BenchTable> {
  const log = options.log;
  const loadBefore = loadAverage();
  log('starting PostgreSQL and ClickHouse…');
  const [postgres, clickhouse] = await Promise.all([startPostgres(), startClickHouse()]);
  const runs: ClusterFanoutRun[] = [];
  try {
    for (const [index, viewers] of options.totals.entries()) {
      runs.push(await runTotal(viewers, 10 + index * 4, postgres, clickhouse.url, options));
    }
  } finally {
    await Promise.allSettled([postgres.stop(), clickhouse.stop()]);
  }
  return clusterFanoutTable(options, runs, { before: loadBefore, after: loadAverage() });
}

async function startOwnNats(): Promise<{ nats: NatsServer; pids: number[] }> {
  const before = new Set(childPids('nats-server'));
  const nats = await startNats();
  return { nats, pids: childPids('nats-server').filter((pid) => !before.has(pid)) };
}

function perSecond(after: Map<string, number>, before: Map<string, number>, ms: number): Map<string, number> {
  const rates = new Map<string, number>();
  for (const [topic, n] of after) rates.set(topic, ((n - (before.get(topic) ?? 0)) * 1000) / ms);
  return rates;
}

async function runTotal(viewers: number, firstRun: number, postgres: PostgresServer, clickhouseUrl: string, options: ClusterFanoutOptions): Promise<ClusterFanoutRun> {
  const log = options.log;
  const fanout: FanoutOptions = { viewers, clientProcesses: options.clientProcesses, wave: options.wave, cycles: options.cycles, voteRounds: options.voteRounds, log };
  const own3 = await startOwnNats();
  const own1 = await startOwnNats();
  const counters: NatsBusCounter[] = [];
  const sides: Side[] = [];
  try {
    const clusterBus = await NatsBusCounter.open(own3.nats.url);
    const oneNodeBus = await NatsBusCounter.open(own1.nats.url);
    counters.push(clusterBus, oneNodeBus);
    const window = `${viewers.toLocaleString('en-US')} viewers over ${options.clientProcesses} client processes`;

    log(`${options.nodes} nodes (full cluster mode): ${window}…`);
    const cluster = await Side.open(() => startClusterTarget(`${options.nodes} nodes`, options.nodes, { postgres, clickhouseUrl, nats: own3.nats }), firstRun, fanout, clusterBus);
    sides.push(cluster);
    await cluster.cycle(0, false);
    log(`1 node (full cluster mode): ${window}…`);
    const oneNode = await Side.open(() => startClusterTarget('1 node', 1, { postgres, clickhouseUrl, nats: own1.nats }), firstRun + 1, fanout, oneNodeBus);
    sides.push(oneNode);
    await oneNode.cycle(0, false);
    let embedded: Side | undefined;
    if (options.embedded) {
      log(`embedded node: ${window}…`);
      embedded = await Side.open(() => startEmbeddedTarget('embedded'), firstRun + 2, fanout);
      sides.push(embedded);
      await embedded.cycle(0, false);
    }
    const showFrame = cluster.showFrame ?? syntheticShowFrame();
    const hideFrame = cluster.hideFrame ?? JSON.stringify({ type: 'overlay.hide', overlayId: `ov_${base62(26)}` });
    log(`baseline (bare ws): ${window}…`);
    const baseline = await Side.open(() => startBaselineTarget(showFrame, hideFrame), firstRun + 3, fanout);
    sides.push(baseline);
    await baseline.cycle(0, false);

    log(`idle ${IDLE_WINDOW_MS / 1000} s: bus messages with no change…`);
    const idle0 = { cluster: clusterBus.snapshot(), oneNode: oneNodeBus.snapshot() };
    await sleep(IDLE_WINDOW_MS);
    await Promise.all([clusterBus.flush(), oneNodeBus.flush()]);
    const idlePerSecond = {
      cluster: perSecond(clusterBus.snapshot(), idle0.cluster, IDLE_WINDOW_MS),
      oneNode: perSecond(oneNodeBus.snapshot(), idle0.oneNode, IDLE_WINDOW_MS),
    };
    log(`  cluster bus: ${[...idlePerSecond.cluster].map(([t, n]) => `${t} ${n.toFixed(1)}/s`).join(', ') || 'nothing'}`);

    const nats0 = totalCpuSeconds(own3.pids);
    const t0 = performance.now();
    for (let cycle = 1; cycle <= options.cycles; cycle++) {
      const vote = cycle <= options.voteRounds;
      await cluster.cycle(cycle, vote);
      await oneNode.cycle(cycle, vote);
      await embedded?.cycle(cycle, vote);
      await baseline.cycle(cycle, false);
    }
    const natsCpuSeconds = totalCpuSeconds(own3.pids) - nats0;
    // What the nodes logged (level warn) tells why a vote or a frame failed.
    for (const side of [cluster, oneNode]) {
      if (!side.votes.some((v) => v.errors > 0)) continue;
      for (const [k, node] of side.target.nodes.entries()) log(`  ${side.target.name}, node ${k + 1} logged (last lines):\n${node.output().slice(-1_500)}`);
    }
    const cyclesSeconds = (performance.now() - t0) / 1000;
    return {
      viewers,
      cluster: await cluster.finish(),
      oneNode: await oneNode.finish(),
      embedded: await embedded?.finish(),
      baseline: await baseline.finish(),
      idlePerSecond,
      largestBytes: new Map(clusterBus.largestBytes),
      natsCpuSeconds,
      cyclesSeconds,
    };
  } finally {
    for (const side of sides.reverse()) await side.close().catch((error: unknown) => log(`closing ${side.target.name}: ${String(error)}`));
    await Promise.allSettled(counters.map((counter) => counter.close()));
    await Promise.allSettled([own3.nats.stop(), own1.nats.stop()]);
  }
}
