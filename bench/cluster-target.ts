import { randomBytes } from 'node:crypto';
import type { NatsServer } from '../packages/storage/test/nats-server';
import type { PostgresServer } from '../packages/storage/test/postgres-server';
import { newCredentials, serviceEnv, serviceTarget, type Target } from './fanout-targets';
import { startService, tempFolder, type Child } from './processes';

/** The engines a benchmark cluster runs on; a cluster gets its own databases, and a NATS server of its own (streams are per server). */
export interface ClusterEngineSet {
  postgres: PostgresServer;
  clickhouseUrl: string;
  nats: NatsServer;
}

/**
 * `nodes` Svc processes in full cluster mode (PostgreSQL + NATS + ClickHouse) as one fan-out
 * target: a fresh PostgreSQL database and ClickHouse database, every node with its own data
 * folder (which full cluster mode does not need). The first node starts alone (it creates the
 * schemas), the others together.
 */
export async function startClusterTarget(name: string, nodes: number, engines: ClusterEngineSet): Promise<Target> {
  const credentials = newCredentials();
  const env = {
    ...serviceEnv(credentials),
    SVC_POSTGRES_URL: await engines.postgres.createDatabase(),
    SVC_NATS_URL: engines.nats.url,
    SVC_CLICKHOUSE_URL: `${engines.clickhouseUrl}/svc_bench_${randomBytes(4).toString('hex')}`,
  };
  const folders = Array.from({ length: nodes }, () => tempFolder('svc-bench-cluster-node-'));
  const started: Child[] = [];
  const startNode = async (k: number) => {
    const node = await startService(folders[k]!.path, { ...env, SVC_NODE_ID: `bench-node-${k + 1}` }, 90_000);
    started.push(node);
    return node;
  };
  const release = () => folders.forEach((folder) => folder.remove());
  try {
    const first = await startNode(0);
    const rest = await Promise.all(folders.slice(1).map((_, k) => startNode(k + 1)));
    return await serviceTarget(name, [first, ...rest], credentials, release);
  } catch (error) {
    await Promise.allSettled(started.map((node) => node.stop(5_000)));
    release();
    throw error;
  }
}
