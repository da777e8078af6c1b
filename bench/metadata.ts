import { Pool } from 'undici';
import { startPostgres } from '../packages/storage/test/postgres-server';
import { percentile } from './load';
import { startService, tempFolder } from './processes';
import { fmt, type BenchTable, type Row } from './report';

/** Cluster figures may be at most this much worse than the embedded ones (requests/s and p99). */
export const MAX_CLUSTER_RATIO = 1.2;
const API_KEY = `svc_pk_${'BenchMetadata'.padEnd(32, '0')}`;
const ADMIN_TOKEN = `svc_sk_${'BenchMetadata'.padEnd(32, '0')}`;
const CONNECTIONS = 16;

export interface MetadataOptions {
  seconds: number;
  /** Embedded and cluster runs alternate this many times; the median of each is reported. */
  repeat: number;
  log: (line: string) => void;
}

interface PathResult {
  requestsPerSecond: number;
  p99Ms: number;
  failures: number;
}

/** Closed loop of GETs on one path: `CONNECTIONS` loops, one request in flight each. */
async function measure(origin: string, path: string, headers: Record<string, string>, seconds: number): Promise<PathResult> {
  const pool = new Pool(origin, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 60_000 });
  const latencies: number[] = [];
  let failures = 0;
  const warmupEnd = performance.now() + 1_000;
  const end = warmupEnd + seconds * 1_000;
  const loop = async () => {
    while (performance.now() < end) {
      const started = performance.now();
      try {
        const answer = await pool.request({ method: 'GET', path, headers });
        await answer.body.dump();
        if (answer.statusCode !== 200 && answer.statusCode !== 304) failures++;
      } catch {
        failures++;
      }
      if (started >= warmupEnd && performance.now() <= end) latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  await pool.close();
  const sorted = Float64Array.from(latencies).sort();
  return { requestsPerSecond: latencies.length / seconds, p99Ms: percentile(sorted, 0.99), failures };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * The metadata paths of a node whose metadata lives in PostgreSQL (cluster mode) next to the
 * embedded default, in the same run: `GET /v1/sdk/config` (what every viewer's SDK asks at
 * start) and an admin read (`GET /v1/broadcasts`). Runs alternate to share the machine's noise.
 */
export async function metadataBenchmark(options: MetadataOptions): Promise<BenchTable> {
  const postgres = await startPostgres();
  const paths: Array<{ name: string; path: string; headers: Record<string, string> }> = [
    { name: 'GET /v1/sdk/config', path: `/v1/sdk/config?apiKey=${API_KEY}`, headers: {} },
    { name: 'GET /v1/broadcasts (admin)', path: '/v1/broadcasts', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
  ];
  const results = new Map<string, { embedded: PathResult[]; cluster: PathResult[] }>(paths.map((p) => [p.name, { embedded: [], cluster: [] }]));
  try {
    for (let round = 0; round < options.repeat; round++) {
      for (const mode of ['embedded', 'cluster'] as const) {
        const folder = tempFolder(`svc-bench-meta-${mode}-`);
        const env: Record<string, string> = { SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN };
        if (mode === 'cluster') env.SVC_POSTGRES_URL = await postgres.createDatabase();
        const service = await startService(folder.path, env);
        try {
          for (const p of paths) {
            options.log(`metadata: round ${round + 1}/${options.repeat}, ${mode}, ${p.name}`);
            results.get(p.name)![mode].push(await measure(service.url, p.path, p.headers, options.seconds));
          }
        } finally {
          await service.stop();
          folder.remove();
        }
      }
    }
  } finally {
    await postgres.stop();
  }
  const rows: Row[] = [];
  let failures = 0;
  for (const p of paths) {
    const { embedded, cluster } = results.get(p.name)!;
    failures += [...embedded, ...cluster].reduce((n, r) => n + r.failures, 0);
    const rps = { embedded: median(embedded.map((r) => r.requestsPerSecond)), cluster: median(cluster.map((r) => r.requestsPerSecond)) };
    const p99 = { embedded: median(embedded.map((r) => r.p99Ms)), cluster: median(cluster.map((r) => r.p99Ms)) };
    rows.push({
      figure: `${p.name}: requests/s, PostgreSQL metadata`,
      value: fmt.int(rps.cluster),
      baseline: `${fmt.int(rps.embedded)} (embedded)`,
      ratio: fmt.ratio(rps.cluster, rps.embedded),
      target: `≥ ${(1 / MAX_CLUSTER_RATIO).toFixed(2)}×`,
      verdict: rps.cluster * MAX_CLUSTER_RATIO >= rps.embedded ? 'pass' : 'fail',
    });
    rows.push({
      figure: `${p.name}: p99 ms, PostgreSQL metadata`,
      value: fmt.ms(p99.cluster),
      baseline: `${fmt.ms(p99.embedded)} (embedded)`,
      ratio: fmt.ratio(p99.cluster, p99.embedded),
      target: `≤ ${MAX_CLUSTER_RATIO}×`,
      verdict: p99.cluster <= p99.embedded * MAX_CLUSTER_RATIO ? 'pass' : 'fail',
    });
  }
  return {
    title: 'Metadata paths: PostgreSQL (cluster mode) next to the embedded default',
    rows,
    notes: [
      `${CONNECTIONS} connections, closed loop, ${options.seconds} s measured after 1 s of warm-up per path; embedded and PostgreSQL runs alternate ${options.repeat} times and the median of each is shown.`,
      'One throwaway PostgreSQL 15 on this machine (fsync off), a fresh database per run; each node keeps its events in its own DuckDB folder.',
    ],
    runErrors: failures > 0,
  };
}
