/**
 * CPU per event of one node under the cluster-ingest benchmark's load (64 connections, batches
 * of 100 new events stamped with the time they are sent), without the rest of that benchmark:
 * for A/B runs of changes to the ingest path. Prints one JSON line.
 *
 *   npx tsx bench/node-cpu.ts <cluster|cluster-without-writer|embedded> [seconds=10] [cpu-profile-folder]
 *
 * cluster: `svc serve` on throwaway PostgreSQL, NATS and ClickHouse servers (as
 * bench/cluster-ingest.ts starts it); cluster-without-writer: the same node with its writer not
 * started (bench/node-without-writer.ts); embedded: `svc serve` on DuckDB.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { startClickHouse } from '../packages/storage/test/clickhouse-server';
import { startNats } from '../packages/storage/test/nats-server';
import { startPostgres } from '../packages/storage/test/postgres-server';
import { EVENTS_PER_BATCH, makeBodies } from './events';
import { base62, UniqueBodies } from './ingest';
import { runLoad } from './load';
import { FreshTimestampBodies } from './fresh-timestamp-bodies';
import { cpuSeconds, READY_LINE, ROOT, startServer, tempFolder } from './processes';

const WARMUP_MS = 3_000;
const CONNECTIONS = 64;
/** Events generated before the run per second of it; more are built on the spot. */
const POOL_EVENTS_PER_SECOND = 120_000;

const mode = process.argv[2] ?? 'cluster';
const seconds = Number(process.argv[3] ?? 10);
const profileFolder = process.argv[4];
if (!['cluster', 'cluster-without-writer', 'embedded'].includes(mode)) throw new Error(`unknown mode ${mode}`);

const pool = makeBodies(Math.ceil(((seconds + WARMUP_MS / 1000) * POOL_EVENTS_PER_SECOND) / EVENTS_PER_BATCH));
const apiKey = `svc_pk_${base62(32)}`;
const folder = tempFolder('svc-node-cpu-');
const env: Record<string, string> = {
  PORT: '0',
  HOST: '127.0.0.1',
  SVC_DATA_DIR: folder.path,
  SVC_LOG_LEVEL: 'warn',
  SVC_RATE_LIMIT_PER_KEY: '0',
  SVC_RATE_LIMIT_PER_IP: '0',
  SVC_SAMPLE_DATA: 'false',
  SVC_BOOTSTRAP_API_KEY: apiKey,
  SVC_BOOTSTRAP_ADMIN_TOKEN: `svc_sk_${base62(32)}`,
};
const stops: Array<() => Promise<void>> = [];
try {
  if (mode !== 'embedded') {
    const [postgres, clickhouse, nats] = await Promise.all([startPostgres(), startClickHouse(), startNats()]);
    stops.push(() => postgres.stop(), () => clickhouse.stop(), () => nats.stop());
    env.SVC_POSTGRES_URL = await postgres.createDatabase();
    env.SVC_NATS_URL = nats.url;
    env.SVC_CLICKHOUSE_URL = `${clickhouse.url}/svc_node_cpu_${randomBytes(4).toString('hex')}`;
  }
  const profile = profileFolder ? ['--cpu-prof', `--cpu-prof-dir=${profileFolder}`] : [];
  const program = mode === 'cluster-without-writer' ? ['--import', 'tsx', 'bench/node-without-writer.ts'] : ['apps/server/bin/svc.js', 'serve'];
  const node = await startServer({ name: 'svc', command: process.execPath, args: [...profile, ...program], cwd: ROOT, env, readyLine: READY_LINE, readyPath: '/readyz' });
  stops.unshift(() => node.stop());
  const cpu = { start: 0, end: 0, mainStart: 0, mainEnd: 0 };
  const loadAverage = loadavg()[0]!;
  const load = await runLoad({
    origin: node.url,
    path: '/v1/events',
    headers: { 'x-svc-api-key': apiKey },
    bodies: new FreshTimestampBodies(new UniqueBodies(pool)),
    connections: CONNECTIONS,
    warmupMs: WARMUP_MS,
    measureMs: seconds * 1000,
    onWindow: (edge) => {
      cpu[edge] = cpuSeconds(node.pid);
      cpu[edge === 'start' ? 'mainStart' : 'mainEnd'] = cpuSeconds(node.pid, node.pid);
    },
  });
  const perEvent = (cpuSeconds: number) => Number(((cpuSeconds / load.events) * 1e6).toFixed(2));
  console.log(
    JSON.stringify({
      mode,
      eventsPerSecond: Math.round(load.events / load.seconds),
      cpuMicrosecondsPerEvent: perEvent(cpu.end - cpu.start),
      mainThreadMicrosecondsPerEvent: perEvent(cpu.mainEnd - cpu.mainStart),
      nodeCores: Number(((cpu.end - cpu.start) / load.seconds).toFixed(2)),
      errors: load.failedRequests + load.rejectedEvents + load.duplicateEvents,
      loadAverage: Number(loadAverage.toFixed(1)),
    }),
  );
} finally {
  for (const stop of stops) await stop().catch(() => undefined);
  folder.remove();
}
process.exit(0);
