import { randomBytes } from 'node:crypto';
import { freePort, startHaproxy, startNatsCluster, type ClickHouseServer, type LoadBalancer, type NatsCluster, type PostgresServer } from '@svc/engines';
import { ChDatabase } from '@svc/storage';
import { request } from 'undici';
import { base62 } from './ingest';
import { startService, tempFolder, type Child } from './processes';

/** NATS servers of a benchmark cluster, every stream replicated on each: as `npm run cluster` runs it. */
export const NATS_SERVERS = 3;

/** How long HAProxy has to answer `/readyz` with 200 once the nodes run. */
const READY_WAIT_MS = 30_000;

async function ready(url: string): Promise<boolean> {
  try {
    const response = await request(`${url}/readyz`);
    await response.body.dump();
    return response.statusCode === 200;
  } catch {
    return false;
  }
}

/** A cluster as `npm run cluster` lays it out, for a benchmark: its own NATS cluster, databases, nodes and HAProxy. */
export interface LbCluster {
  /** HAProxy's address: where the benchmark sends its requests. */
  url: string;
  apiKey: string;
  adminToken: string;
  nodes: Child[];
  nats: NatsCluster;
  balancer: LoadBalancer;
  /** The cluster's ClickHouse database, open. */
  events: ChDatabase;
  /** Stops the nodes, HAProxy and NATS; drops the ClickHouse database. */
  stop(): Promise<void>;
}

/**
 * `nodeCount` Svc nodes in full cluster mode behind HAProxy (packages/engines' configuration,
 * health-checked by `/readyz`), on a fresh NATS cluster of NATS_SERVERS servers (streams with as
 * many replicas) and a fresh PostgreSQL database and ClickHouse database on the shared servers.
 * `env` adds to every node's environment.
 */
export async function startLbCluster(nodeCount: number, postgres: PostgresServer, clickhouse: ClickHouseServer, env: Record<string, string> = {}): Promise<LbCluster> {
  const nats = await startNatsCluster(NATS_SERVERS);
  const database = `svc_bench_lb_${randomBytes(4).toString('hex')}`;
  const credentials = { apiKey: `svc_pk_${base62(32)}`, adminToken: `svc_sk_${base62(32)}` };
  const folders = Array.from({ length: nodeCount }, () => tempFolder('svc-bench-lb-node-'));
  const nodes: Child[] = [];
  let balancer: LoadBalancer | undefined;
  let events: ChDatabase | undefined;
  const stop = async () => {
    await Promise.allSettled(nodes.map((node) => node.stop()));
    await balancer?.stop();
    await events?.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await events?.close();
    await nats.stop();
    folders.forEach((folder) => folder.remove());
  };
  try {
    const nodeEnv = {
      SVC_BOOTSTRAP_API_KEY: credentials.apiKey,
      SVC_BOOTSTRAP_ADMIN_TOKEN: credentials.adminToken,
      SVC_POSTGRES_URL: await postgres.createDatabase(),
      SVC_NATS_URL: nats.urls,
      SVC_NATS_REPLICAS: String(NATS_SERVERS),
      SVC_CLICKHOUSE_URL: `${clickhouse.url}/${database}`,
      // Every request comes through the load balancer.
      SVC_TRUST_PROXY: 'loopback',
      ...env,
    };
    const start = async (k: number) => nodes.push(await startService(folders[k]!.path, { ...nodeEnv, SVC_NODE_ID: `bench-node-${k + 1}` }, 90_000));
    // The first node alone creates the schemas and the tenant; the others together.
    await start(0);
    await Promise.all(folders.slice(1).map((_, k) => start(k + 1)));
    balancer = await startHaproxy(
      await freePort(),
      nodes.map((node, k) => ({ name: `node-${k + 1}`, address: new URL(node.url).host })),
    );
    const url = balancer.url;
    const deadline = Date.now() + READY_WAIT_MS;
    while (!(await ready(url))) {
      if (Date.now() > deadline) throw new Error(`${url}/readyz did not answer 200 through HAProxy within ${READY_WAIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    events = await ChDatabase.open(clickhouse.url, database);
    return { url: balancer.url, ...credentials, nodes, nats, balancer, events, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The pids of a process list, those that run. */
export const running = (pids: Array<number | undefined>): number[] => pids.filter((pid): pid is number => pid !== undefined);
