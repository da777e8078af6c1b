/**
 * CPU per event of the ingest path inside one process, without HTTP or a store: the JSON parse
 * of the benchmark's bodies (100 events each), then `IngestService` (validation, clock-skew
 * correction, enrichment, keys) committing through a `GroupCommitter` into a store that takes
 * everything at once. Both the embedded and the cluster node run this path. Prints the min and
 * median of 12 rounds of 200,000 events. With `jetstream`, the store is the cluster node's
 * JetStreamEventStore (recent-ids cache, the messages' lines and ids) with only the publish
 * faked, and every round sends new event ids.
 *
 *   npx tsx bench/ingest-path-cpu.ts [jetstream]
 */
import { GroupCommitter, IngestService } from '@svc/ingest';
import { jsonMayHoldLoneSurrogate, wellFormedValue } from '@svc/protocol';
import { eventKey, JetStreamEventStore, type CommitBatch, type EventLog, type EventStore, type MetaStore, type Tenant } from '@svc/storage';
import { ServerMetrics } from '../apps/server/src/metrics';
import { EVENTS_PER_BATCH, makeBodies } from './events';

const BODIES = 2_000;
const ROUNDS = 12;

const jetstream = process.argv[2] === 'jetstream';
/** An event log whose publish only takes the message: what the node does up to the socket write. */
const log = { maxBodyBytes: 1_048_576 - 4_096, publish: async () => ({ duplicate: false }) } as unknown as EventLog;
const store = jetstream
  ? new JetStreamEventStore(log, null as unknown as EventStore)
  : ({
      commit: async (batch: CommitBatch) => ({ inserted: new Set(batch.keys ?? batch.events.map((e) => eventKey(e.tenantSeq, e.eventId))) }),
    } as unknown as EventStore);
const meta = {
  resolveBroadcasts: async (_tenantSeq: number, list: Array<{ broadcastId: string; campaignId: number }>) => new Map(list.map((b) => [b.broadcastId, b.campaignId])),
} as unknown as MetaStore;
const metrics = new ServerMetrics();
const service = new IngestService(meta, store, new GroupCommitter(store, metrics, { group: false }), undefined, metrics);
const tenant = { seq: 1, id: 'demo', name: 'Demo', createdAt: 0, retentionMonths: 13, settings: { defaultCampaignId: 1, fallbackCountry: null } } as unknown as Tenant;
let bodies = makeBodies(BODIES).map((body) => body.toString());

async function round(): Promise<number> {
  // The recent-ids cache would take the same ids again as duplicates.
  if (jetstream) bodies = makeBodies(BODIES).map((body) => body.toString());
  const start = process.cpuUsage();
  for (const text of bodies) {
    const parsed: unknown = JSON.parse(text);
    const body = jsonMayHoldLoneSurrogate(text) ? wellFormedValue(parsed) : parsed;
    const result = await service.ingest({ tenant, source: 'client', country: 'DE', body, bodyBytes: text.length });
    if (result.accepted !== EVENTS_PER_BATCH) throw new Error(`not every event was accepted: ${JSON.stringify(result).slice(0, 500)}`);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / (bodies.length * EVENTS_PER_BATCH);
}

const perEvent: number[] = [];
for (let i = 0; i < ROUNDS; i++) perEvent.push(await round());
perEvent.sort((a, b) => a - b);
console.log(`ingest path${jetstream ? ' through JetStreamEventStore' : ''}: ${perEvent[0]!.toFixed(2)} µs CPU per event (min), ${perEvent[ROUNDS / 2]!.toFixed(2)} (median of ${ROUNDS} rounds)`);
