import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from '../../../packages/storage/test/clickhouse-server';
import { natsAvailable, startNats, startNatsCluster, type NatsCluster, type NatsServer } from '../../../packages/storage/test/nats-server';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../../packages/storage/test/postgres-server';
import { HAPROXY_BIN } from '@svc/engines';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startChildServer, type ChildOptions, type ChildServer } from './child-server';

export const CLUSTER_API_KEY = `svc_pk_${'ClusterDemo'.padEnd(32, '0')}`;
export const CLUSTER_ADMIN_TOKEN = `svc_sk_${'ClusterDemo'.padEnd(32, '0')}`;

/** Whether full cluster tests can run: PostgreSQL, NATS and ClickHouse (in CI a missing one fails). */
export function clusterEnginesAvailable(): boolean {
  // Each check runs, so that the message names every missing engine.
  return [postgresAvailable(), natsAvailable(), clickhouseAvailable()].every(Boolean);
}

/**
 * Whether tests of the load balancer in front of the nodes can run: Debian's HAProxy (in CI a
 * missing one fails, locally the tests skip with the package to install).
 */
export function haproxyAvailable(): boolean {
  if (existsSync(HAPROXY_BIN)) return true;
  const missing = `${HAPROXY_BIN} is missing`;
  if (process.env.CI) throw new Error(`${missing}: .ci/run must install Debian's haproxy package.`);
  console.warn(`Skipping load balancer tests: ${missing} (apt-get install haproxy).`);
  return false;
}

/** One throwaway server of each engine; `cluster()` gives the settings of a fresh cluster on them. */
export interface ClusterEngines {
  postgres: PostgresServer;
  /** The NATS server; with `natsNodes` > 1, the first server of `natsCluster`. */
  nats: NatsServer;
  /** The NATS cluster, when started with `natsNodes` > 1. */
  natsCluster?: NatsCluster;
  clickhouse: ClickHouseServer;
  /**
   * The environment of the nodes of a fresh cluster: its own PostgreSQL database and ClickHouse
   * database. NATS streams are per server, so one NATS server serves one cluster at a time.
   * On a NATS cluster, `SVC_NATS_URL` lists every server and streams have one replica per server.
   */
  clusterEnv(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

export interface ClusterEnginesOptions {
  /** NATS servers, routed into one cluster when more than one (`startNatsCluster`); default 1. */
  natsNodes?: number;
}

export async function startClusterEngines(options: ClusterEnginesOptions = {}): Promise<ClusterEngines> {
  const natsNodes = options.natsNodes ?? 1;
  const [postgres, natsCluster, clickhouse] = await Promise.all([
    startPostgres(),
    natsNodes > 1 ? startNatsCluster(natsNodes) : startNats().then((server) => ({ nodes: [server], urls: server.url, stop: () => server.stop() })),
    startClickHouse(),
  ]);
  const nats = natsCluster.nodes[0]!;
  return {
    postgres,
    nats,
    natsCluster: natsNodes > 1 ? natsCluster : undefined,
    clickhouse,
    async clusterEnv() {
      const postgresUrl = await postgres.createDatabase();
      return {
        SVC_POSTGRES_URL: postgresUrl,
        SVC_POSTGRES_POOL_SIZE: '3',
        SVC_NATS_URL: natsCluster.urls,
        ...(natsNodes > 1 ? { SVC_NATS_REPLICAS: String(natsNodes) } : {}),
        SVC_CLICKHOUSE_URL: `${clickhouse.url}/svc_${randomBytes(4).toString('hex')}`,
        SVC_BOOTSTRAP_API_KEY: CLUSTER_API_KEY,
        SVC_BOOTSTRAP_ADMIN_TOKEN: CLUSTER_ADMIN_TOKEN,
      };
    },
    async stop() {
      await Promise.allSettled([postgres.stop(), natsCluster.stop(), clickhouse.stop()]);
    },
  };
}

/** A Svc node (child process) of the cluster `env`, with a data folder of its own that it must not need. */
export async function startClusterNode(env: Record<string, string>, extra: Record<string, string> = {}, options: ChildOptions = {}): Promise<ChildServer & { dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-cluster-node-'));
  const node = await startChildServer({ SVC_DATA_DIR: dataDir, ...env, ...extra }, 40_000, options);
  void node.exited.then(() => rmSync(dataDir, { recursive: true, force: true }));
  return { ...node, dataDir };
}

/**
 * Registers, in the calling `describe`, engines and one node of a fresh cluster on them, started
 * before its tests and stopped after; the returned object holds them once started.
 */
export function clusterOfOneNode(): { engines: ClusterEngines; node: ChildServer } {
  const cluster = {} as { engines: ClusterEngines; node: ChildServer };
  beforeAll(async () => {
    cluster.engines = await startClusterEngines();
    cluster.node = await startClusterNode(await cluster.engines.clusterEnv());
  }, 90_000);
  afterAll(async () => {
    if (cluster.node) {
      cluster.node.process.kill('SIGTERM');
      await cluster.node.exited;
    }
    await cluster.engines?.stop();
  });
  return cluster;
}

/** Which server of `servers` holds the NATS connection of the node named `nodeId` (its connection name), by their monitoring pages; -1 if none. */
export async function natsServerOf(servers: Pick<NatsServer, 'monitorUrl'>[], nodeId: string): Promise<number> {
  for (const [i, server] of servers.entries()) {
    const connz = (await (await fetch(`${server.monitorUrl}/connz?limit=1024`)).json()) as { connections?: Array<{ name?: string }> };
    if (connz.connections?.some((connection) => connection.name === nodeId)) return i;
  }
  return -1;
}

/** A Svc node of a cluster test, with the data folder it must not need. */
export type ClusterNode = ChildServer & { dataDir: string };

/** What {@link freshClusterPerTest} gives the tests of its `describe`. */
export interface FreshClusters {
  /** The engines, started once for the `describe`. */
  engines(): ClusterEngines;
  /** This test's NATS server, once `freshCluster()` started it. */
  nats(): NatsServer | undefined;
  /** A fresh cluster's environment (with `settings`), on a NATS server of its own: JetStream streams are per server. */
  freshCluster(): Promise<Record<string, string>>;
  /** Starts a node of the cluster `env` (as `startClusterNode`); it is SIGKILLed after the test. */
  node(env: Record<string, string>, extra?: Record<string, string>, options?: ChildOptions): Promise<ClusterNode>;
}

/**
 * Registers, in the calling `describe`, engines started once and, for each test, a fresh cluster:
 * its own NATS server and nodes, all stopped after the test (nodes SIGKILLed). `settings` go into
 * every cluster's environment (short ack waits, for instance).
 */
export function freshClusterPerTest(settings: Record<string, string> = {}): FreshClusters {
  let engines: ClusterEngines | undefined;
  let nats: NatsServer | undefined;
  const nodes: ClusterNode[] = [];
  beforeAll(async () => {
    engines = await startClusterEngines();
  }, 60_000);
  afterEach(async () => {
    for (const node of nodes.splice(0)) {
      node.process.kill('SIGKILL');
      await node.exited;
    }
    await nats?.stop();
    nats = undefined;
  });
  afterAll(async () => {
    await engines?.stop();
  });
  return {
    engines: () => engines!,
    nats: () => nats,
    freshCluster: async () => {
      nats = await startNats();
      return { ...(await engines!.clusterEnv()), SVC_NATS_URL: nats.url, ...settings };
    },
    node: async (env, extra = {}, options = {}) => {
      const started = await startClusterNode(env, extra, options);
      nodes.push(started);
      return started;
    },
  };
}
