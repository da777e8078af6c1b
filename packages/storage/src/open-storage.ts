import type { Bus } from '@svc/protocol';
import { DuckDbDatabase, type DatabaseOptions } from './duckdb/duckdb-database';
import { DuckDbEventStore } from './duckdb/duckdb-event-store';
import { DuckDbMetaStore } from './duckdb/duckdb-meta-store';
import { DuckDbDeletionStore } from './duckdb/duckdb-deletion-store';
import type { DeletionJobStore } from './deletion-job-store';
import type { UserErasureStore } from './user-erasure-store';
import { DuckDbContentStore } from './duckdb/duckdb-content-store';
import type { ContentStore } from './content-store';
import type { InteractionStore } from './interaction-store';
import { DuckDbWebhookStore } from './duckdb/duckdb-webhook-store';
import type { WebhookEndpointStore } from './webhook-endpoint-store';
import type { WebhookDeliveryStore } from './webhook-delivery-store';
import { DuckDbAnalyticsStore } from './duckdb/duckdb-analytics-store';
import type { AnalyticsStore } from './analytics-store';
import type { EventStore } from './event-store';
import type { MetaStore } from './meta-store';
import { DuckDbSessionStore } from './duckdb/duckdb-session-store';
import type { SessionStore } from './session-store';
import type { UndecodableEvent } from './duckdb/undecodable-events';
import type { ViewerClaims } from './viewer-claims';
import type { MetadataChangeFeed } from './metadata-change-feed';
import { InProcessChangeFeed } from './in-process-change-feed';
import type { NewDelivery } from './event-store';
import type { DeliveryAttemptLog, WebhookQueue } from './webhook-queue';
import type { SessionDirectory } from './session-directory';
import type { WriterBatchReport } from './nats/event-log-writer';
import type { ConsumerLag } from './nats/consumer-lag';

/** What full cluster mode's pipeline reports as it works, for /metrics. */
export interface PipelineObserver {
  /** A batch this node's writer wrote into the event database. */
  writerBatch(batch: WriterBatchReport): void;
  /** A ping of this node's bus came back through NATS after `ms`. */
  busRoundTrip(ms: number): void;
  /** A ping of this node's bus did not come back in time. */
  busPingLost(): void;
}

/**
 * What a node of full cluster mode runs besides answering requests: the writer that moves the
 * JetStream event log into ClickHouse (and queues the webhook deliveries of what it stored, then
 * publishes `events.stored` on the storage's bus, which reaches every node), and the webhook work queue.
 */
export interface EventPipeline {
  /** Starts the writer and the erasure tombstones; failures it survives go to `onError`. */
  start(onError: (error: unknown, what: string) => void): Promise<void>;
  /** Stops the writer after the batch in hand. */
  stop(): Promise<void>;
  /** Tells `observer` of the writer's batches and the bus's round trips from now on. */
  observe(observer: PipelineObserver): void;
  /** The lag of the shared consumers (EVENTS' writers, WEBHOOKS' dispatchers), read at most every few seconds. */
  consumerLag(): Promise<ConsumerLag[]>;
  /**
   * The webhook work queue, the attempt log, and whether a queued delivery's user is (being)
   * erased (read again at once when this node's bus announces `user.erasing`).
   */
  webhooks: {
    queue: WebhookQueue;
    log: DeliveryAttemptLog;
    erased: (delivery: NewDelivery) => boolean;
  };
}

/** The stores a process works with, whatever backend holds them. */
export interface Storage {
  events: EventStore;
  meta: MetaStore;
  /** Deletion jobs (metadata). */
  deletions: DeletionJobStore;
  /** The erasure of a user's data where the events are. */
  erasure: UserErasureStore;
  content: ContentStore;
  /** Votes and entries, read from the events (event-side, beside `events`). */
  interactions: InteractionStore;
  webhookEndpoints: WebhookEndpointStore;
  /** The outbox and attempt log beside the events; in full cluster mode the attempt log in PostgreSQL (the deliveries wait in the work queue). */
  webhookDeliveries: WebhookDeliveryStore;
  analytics: AnalyticsStore;
  /** Dashboard sessions. */
  sessions: SessionStore;
  /**
   * Notices of metadata changes between the nodes sharing this metadata, which the services'
   * caches follow (in process for the embedded default; LISTEN/NOTIFY on PostgreSQL).
   */
  changes: MetadataChangeFeed;
  /** Full cluster mode's event pipeline; absent where a commit stores the events itself. */
  pipeline?: EventPipeline;
  /**
   * The bus between nodes the storage's engines carry (full cluster mode: `NatsBus` on the
   * node's NATS connection, closed with the storage); absent where the node's bus is in process.
   */
  bus?: Bus;
  /**
   * Every node's claims of a viewer's one vote per poll and one entry per contest (full cluster
   * mode: the NATS KV bucket `svc_claims`); absent where one node's rooms decide alone.
   */
  claims?: ViewerClaims;
  /**
   * Viewers' open sessions shared by the nodes (full cluster mode: the NATS KV bucket
   * `svc_sessions`), so that a session resumes on another node; absent where the node is alone.
   */
  sessionDirectory?: SessionDirectory;
  /** Throws when the backend cannot answer (readiness). */
  ping(): Promise<void>;
  /** Bytes of memory the backend holds in this process (0 when it lives elsewhere). */
  memoryBytes(): Promise<number>;
  /** Writes the backend refused for lack of room or permission since it was opened. */
  refusedWrites(): number;
  /** Stored events set aside since opening because a reader could not decode them (see undecodable-events). */
  undecodableEvents(): number;
  /** Calls `listener` with each lot of events set aside, first with those set aside at opening. */
  onUndecodableEvents(listener: (events: UndecodableEvent[]) => void): void;
  close(): Promise<void>;
}

/** The embedded default: one DuckDB file under `dataDir` holds everything. */
export async function openEmbeddedStorage(dataDir: string, options: DatabaseOptions = {}): Promise<Storage> {
  const db = await DuckDbDatabase.open(dataDir, options);
  const webhooks = new DuckDbWebhookStore(db);
  const content = new DuckDbContentStore(db);
  const deletions = new DuckDbDeletionStore(db);
  return {
    events: new DuckDbEventStore(db),
    meta: new DuckDbMetaStore(db),
    deletions,
    erasure: deletions,
    content,
    interactions: content,
    webhookEndpoints: webhooks,
    webhookDeliveries: webhooks,
    analytics: new DuckDbAnalyticsStore(db),
    sessions: new DuckDbSessionStore(db),
    changes: new InProcessChangeFeed(),
    ping: () => db.ping(),
    memoryBytes: () => db.memoryBytes(),
    refusedWrites: () => db.refusedWriteCount(),
    undecodableEvents: () => db.undecodableEventCount(),
    onUndecodableEvents: (listener) => db.onUndecodableEvents(listener),
    close: () => db.close(),
  };
}
