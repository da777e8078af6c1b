import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from '../../../packages/storage/test/clickhouse-server';
import { natsAvailable, startNats, type NatsServer } from '../../../packages/storage/test/nats-server';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../../packages/storage/test/postgres-server';
import { afterAll, beforeAll } from 'vitest';
import { startChildServer, type ChildServer } from './child-server';

export const CLUSTER_API_KEY = `svc_pk_${'ClusterDemo'.padEnd(32, '0')}`;
export const CLUSTER_ADMIN_TOKEN = `svc_sk_${'ClusterDemo'.padEnd(32, '0')}`;

/** Whether full cluster tests can run: PostgreSQL, NATS and ClickHouse (in CI a missing one fails). */
export function clusterEnginesAvailable(): boolean {
  // Each check runs, so that the message names every missing engine.
  return [postgresAvailable(), natsAvailable(), clickhouseAvailable()].every(Boolean);
}

/** One throwaway server of each engine; `cluster()` gives the settings of a fresh cluster on them. */
export interface ClusterEngines {
  postgres: PostgresServer;
  nats: NatsServer;
  clickhouse: ClickHouseServer;
  /**
   * The environment of the nodes of a fresh cluster: its own PostgreSQL database and ClickHouse
   * database. NATS streams are per server, so one NATS server serves one cluster at a time.
   */
  clusterEnv(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

export async function startClusterEngines(): Promise<ClusterEngines> {
  const [postgres, nats, clickhouse] = await Promise.all([startPostgres(), startNats(), startClickHouse()]);
  return {
    postgres,
    nats,
    clickhouse,
    async clusterEnv() {
      const postgresUrl = await postgres.createDatabase();
      return {
        SVC_POSTGRES_URL: postgresUrl,
        SVC_POSTGRES_POOL_SIZE: '3',
        SVC_NATS_URL: nats.url,
        SVC_CLICKHOUSE_URL: `${clickhouse.url}/svc_${randomBytes(4).toString('hex')}`,
        SVC_BOOTSTRAP_API_KEY: CLUSTER_API_KEY,
        SVC_BOOTSTRAP_ADMIN_TOKEN: CLUSTER_ADMIN_TOKEN,
      };
    },
    async stop() {
      await Promise.allSettled([postgres.stop(), nats.stop(), clickhouse.stop()]);
    },
  };
}

/** A Svc node (child process) of the cluster `env`, with a data folder of its own that it must not need. */
export async function startClusterNode(env: Record<string, string>, extra: Record<string, string> = {}): Promise<ChildServer & { dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-cluster-node-'));
  const node = await startChildServer({ SVC_DATA_DIR: dataDir, ...env, ...extra }, 40_000);
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
