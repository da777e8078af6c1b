/**
 * A full cluster mode node as `svc serve` starts it, except that its writer (and the rest of
 * the event pipeline: stored notices, erasure tombstones) is not started: for measuring what
 * the ingest path alone costs a node (`bench/node-cpu.ts cluster-without-writer`). Its events
 * stay in the stream. Environment as for `svc serve`.
 */
import { PollCatalogue } from '@svc/content';
import { openEventClusterStorage } from '@svc/storage';
import { loadConfig } from '../apps/server/src/config';
import { serve } from '../apps/server/src/serve';

const config = loadConfig(process.env);
if (!config.postgresUrl || !config.natsServers || !config.clickhouseUrl) throw new Error('SVC_POSTGRES_URL, SVC_NATS_URL and SVC_CLICKHOUSE_URL are needed.');
const storage = await openEventClusterStorage(config.postgresUrl, {
  natsServers: config.natsServers,
  natsReplicas: config.natsReplicas,
  clickhouseUrl: config.clickhouseUrl,
  polls: new PollCatalogue(),
  nodeId: config.nodeId,
  postgres: { poolSize: config.postgresPoolSize },
});
storage.pipeline!.start = async () => {};
await serve(config, { storage });
