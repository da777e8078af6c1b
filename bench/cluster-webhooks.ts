import type { ClickHouseServer, PostgresServer } from '@svc/engines';
import { startLbCluster } from './lb-cluster';
import { base62 } from './ingest';
import { cpuSeconds, startService, tempFolder, type Child } from './processes';
import { fmt } from './report';
import { burst, createEndpoint, type Phase, type Receiver } from './webhooks';

/**
 * After an endpoint is created through one node, how long the benchmark waits before ingesting:
 * the other nodes learn of it from PostgreSQL's change feed.
 */
const ENDPOINT_SPREAD_MS = 3_000;

export interface WebhookBurst extends Phase {
  ingestSeconds: number;
  /** Svc nodes dispatching; 0 for the embedded node. */
  nodes: number;
  /** CPU seconds of every node together from the first ingest request to the last receipt. */
  nodesCpuSeconds: number;
}

const totalCpu = (nodes: Child[]) => nodes.reduce((sum, node) => sum + (cpuSeconds(node.pid) || 0), 0);

/** The embedded dispatcher: one `svc serve` on DuckDB, a burst of `events` to one endpoint (as bench/webhooks.ts). */
export async function embeddedWebhookBurst(receiver: Receiver, events: number, log: (line: string) => void): Promise<WebhookBurst> {
  const folder = tempFolder('svc-bench-cluster-webhooks-');
  const credentials = { SVC_BOOTSTRAP_API_KEY: `svc_pk_${base62(32)}`, SVC_BOOTSTRAP_ADMIN_TOKEN: `svc_sk_${base62(32)}`, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' };
  const node = await startService(folder.path, credentials);
  try {
    const secret = await createEndpoint(node, credentials.SVC_BOOTSTRAP_ADMIN_TOKEN, receiver.url);
    const cpu0 = totalCpu([node]);
    const phase = await burst(node, credentials.SVC_BOOTSTRAP_API_KEY, receiver, secret, events, log);
    return { ...phase, nodes: 0, nodesCpuSeconds: totalCpu([node]) - cpu0 };
  } finally {
    await node.stop();
    folder.remove();
  }
}

/**
 * The shared queue: `nodeCount` nodes in full cluster mode behind HAProxy (bench/lb-cluster.ts),
 * each running its QueueDispatcher on the WEBHOOKS work queue; the burst is ingested through
 * HAProxy, so every node enqueues and every node delivers.
 */
export async function clusterWebhookBurst(nodeCount: number, receiver: Receiver, events: number, postgres: PostgresServer, clickhouse: ClickHouseServer, log: (line: string) => void): Promise<WebhookBurst> {
  const cluster = await startLbCluster(nodeCount, postgres, clickhouse, { SVC_WEBHOOK_ALLOW_PRIVATE: 'true' });
  try {
    // `burst` ingests at the address it is given: HAProxy's.
    const entry: Child = { ...cluster.nodes[0]!, url: cluster.url };
    const secret = await createEndpoint(entry, cluster.adminToken, receiver.url);
    await new Promise((resolve) => setTimeout(resolve, ENDPOINT_SPREAD_MS));
    const cpu0 = totalCpu(cluster.nodes);
    const phase = await burst(entry, cluster.apiKey, receiver, secret, events, log);
    log(`  ${fmt.int(phase.deliveries / phase.seconds)} deliveries/s from the shared queue, ${nodeCount} nodes`);
    return { ...phase, nodes: nodeCount, nodesCpuSeconds: totalCpu(cluster.nodes) - cpu0 };
  } finally {
    await cluster.stop();
  }
}
