import { fanOut, type Bus } from '@svc/protocol';
import { ChDatabase } from './clickhouse/ch-database';
import { ClickHouseEventStore } from './clickhouse/clickhouse-event-store';
import { ClickHouseErasureStore } from './clickhouse/clickhouse-erasure-store';
import { ClickHouseInteractionStore } from './clickhouse/clickhouse-interaction-store';
import { ClickHouseAnalyticsStore } from './clickhouse/clickhouse-analytics-store';
import type { PollLookup } from './clickhouse/ch-poll-results';
import { connectNats } from './nats/nats-connection';
import { EventLog, EVENTS_STREAM } from './nats/event-log';
import { JetStreamEventStore } from './nats/jetstream-event-store';
import type { EventLogWriterOptions } from './nats/event-log-writer';
import { EventLogWriterThread, type EventLogWriterThreadOptions } from './nats/writer-thread';
import { DeliveryQueue, WEBHOOK_CONSUMER, WEBHOOK_STREAM } from './nats/delivery-queue';
import { AckedMessageSweep } from './nats/acked-message-sweep';
import { WRITER_CONSUMER } from './nats/writer-consumer';
import { NatsBus } from './nats/nats-bus';
import { NatsViewerClaims } from './nats/nats-viewer-claims';
import { NatsSessionDirectory } from './nats/nats-session-directory';
import { PgDatabase, type PgDatabaseOptions } from './postgres/pg-database';
import { PgMetaStore } from './postgres/pg-meta-store';
import { PgContentStore } from './postgres/pg-content-store';
import { PgWebhookEndpointStore } from './postgres/pg-webhook-endpoint-store';
import { PgDeletionJobStore } from './postgres/pg-deletion-job-store';
import { PgSessionStore } from './postgres/pg-session-store';
import { PgChangeFeed } from './postgres/pg-change-feed';
import { PgWebhookDeliveryStore } from './postgres/pg-webhook-delivery-store';
import { PgErasureTombstones } from './postgres/pg-erasure-tombstones';
import { PipelineErasureStore } from './nats/pipeline-erasure-store';
import type { UserErasureStore } from './user-erasure-store';
import { BusRoundTrip } from './nats/bus-round-trip';
import { ConsumerLagReader } from './nats/consumer-lag';
import type { Storage, EventPipeline, PipelineObserver } from './open-storage';

/** What the node's writer thread is started with, but for its error callback. */
type WriterThreadSetup = Omit<EventLogWriterThreadOptions, 'onError'>;

/** The ClickHouse database when `SVC_CLICKHOUSE_URL` names none. */
export const DEFAULT_CLICKHOUSE_DATABASE = 'svc';

export interface EventClusterStorageOptions {
  /** NATS servers (JetStream): the event log, the webhook work queue, the bus between nodes. */
  natsServers: string[];
  /** Replicas of the JetStream streams (1 on one NATS server, 3 in production). */
  natsReplicas: number;
  /** ClickHouse HTTP(S) URL; its path names the database (`DEFAULT_CLICKHOUSE_DATABASE` when none). */
  clickhouseUrl: string;
  /** The polls the dashboard's poll results name (their questions and options live in PostgreSQL). */
  polls: PollLookup;
  /** Shown in NATS's connection list. */
  nodeId?: string;
  /** The PostgreSQL pool (size, connect timeout); `PgDatabase`'s defaults when unset. */
  postgres?: PgDatabaseOptions;
  /** Ack wait of the writers' consumer on EVENTS, ms; `WRITER_ACK_WAIT_MS` when unset. */
  writerAckWaitMs?: number;
  /** Ack wait of the dispatchers' consumer on WEBHOOKS, ms; `DEFAULT_ACK_WAIT_MS` of the queue when unset. */
  webhookAckWaitMs?: number;
  /** The event writer's other timing (tests shorten the retry pause); `EventLogWriter`'s defaults when unset. */
  writer?: Pick<EventLogWriterOptions, 'retryDelayMs' | 'batchWaitMs'>;
  /**
   * How long opening keeps trying engines that answer `storage_unavailable` (a NATS cluster
   * electing its JetStream leader, a server still starting), ms; `STARTUP_RETRY_MS` when unset.
   */
  startupRetryMs?: number;
  /** Told of each failed attempt that will be tried again, with the pause before it. */
  onStartupRetry?(error: Error, retryInMs: number): void;
}

/** How long a starting node keeps trying engines that are not ready yet, ms. */
export const STARTUP_RETRY_MS = 60_000;
/** Longest pause between two attempts, ms (they start at 250 ms and double). */
const STARTUP_RETRY_MAX_PAUSE_MS = 5_000;

/** `http://u:p@host:8123/db` → the server's URL and the database `db`. */
export function splitClickHouseUrl(url: string): { serverUrl: string; database: string } {
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.replace(/^\/+|\/+$/g, '')) || DEFAULT_CLICKHOUSE_DATABASE;
  parsed.pathname = '/';
  return { serverUrl: parsed.toString().replace(/\/$/, ''), database };
}

/**
 * Full cluster mode: metadata in PostgreSQL (as `openClusterStorage`), events through the
 * JetStream stream EVENTS into ClickHouse, webhook deliveries from the JetStream work queue
 * WEBHOOKS with their attempt log in PostgreSQL. Nothing is kept on the node's disk.
 *
 * A commit is acknowledged once JetStream has stored it; the `pipeline`'s writer (every node
 * runs one, they share the work) moves the stream into ClickHouse. Reads go to ClickHouse.
 * A user's erasure first waits for the writer to pass the stream's position at its start, and
 * the writer drops the rows of users with an unfinished erasure, so nothing the user sent
 * before it is written after it. The node's bus (`storage.bus`) is a `NatsBus` on the node's
 * connection: the writer publishes `events.stored` on it, which reaches every node. The
 * claims of votes and entries (`storage.claims`) are the KV bucket `svc_claims` on that connection.
 */
export async function openEventClusterStorage(postgresUrl: string, options: EventClusterStorageOptions): Promise<Storage> {
  const deadline = Date.now() + (options.startupRetryMs ?? STARTUP_RETRY_MS);
  for (let pauseMs = 250; ; pauseMs = Math.min(STARTUP_RETRY_MAX_PAUSE_MS, pauseMs * 2)) {
    try {
      return await openOnce(postgresUrl, options);
    } catch (error) {
      // Engines that are there but not ready yet are waited for; anything else fails at once.
      if ((error as { code?: unknown }).code !== 'storage_unavailable' || Date.now() + pauseMs > deadline) throw error;
      options.onStartupRetry?.(error as Error, pauseMs);
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}

async function openOnce(postgresUrl: string, options: EventClusterStorageOptions): Promise<Storage> {
  const opened: Array<() => Promise<unknown>> = [];
  const closeOpened = () => Promise.allSettled(opened.reverse().map((close) => close()));
  try {
    const pg = await PgDatabase.open(postgresUrl, options.postgres);
    opened.push(() => pg.close());
    const { serverUrl, database } = splitClickHouseUrl(options.clickhouseUrl);
    const ch = await ChDatabase.open(serverUrl, database);
    opened.push(() => ch.close());
    const nats = await connectNats(options.natsServers.join(','), { name: options.nodeId });
    opened.push(() => nats.close());
    const bus = new NatsBus(nats);
    opened.push(async () => bus.close());
    const claims = await NatsViewerClaims.open(nats, { replicas: options.natsReplicas });
    const log = await EventLog.open(nats, { replicas: options.natsReplicas });
    const queue = await DeliveryQueue.open(nats, { replicas: options.natsReplicas, ackWaitMs: options.webhookAckWaitMs });
    const sessionDirectory = await NatsSessionDirectory.open(nats, { replicas: options.natsReplicas });
    const changes = await PgChangeFeed.start(pg);
    opened.push(() => changes.close());

    const stored = new ClickHouseEventStore(ch);
    const deliveries = new PgWebhookDeliveryStore(pg, queue);
    const tombstones = new PgErasureTombstones(pg);
    const deletions = new PgDeletionJobStore(pg);
    const timing = { ...options.writer, ackWaitMs: options.writerAckWaitMs };
    // The writer runs in a thread of its own, with its own connections (see writer-thread.ts).
    const writer: WriterThreadSetup = {
      natsServers: options.natsServers.join(','),
      nodeId: options.nodeId,
      natsReplicas: options.natsReplicas,
      webhookAckWaitMs: options.webhookAckWaitMs,
      clickhouseServerUrl: serverUrl,
      database,
      timing,
      jobs: deletions,
    };
    const pipeline = eventPipeline(log, writer, queue, deliveries, tombstones, bus);
    // The bus's round trip through NATS, measured on the connection the bus uses.
    const roundTrip = new BusRoundTrip(nats, { onRoundTrip: (ms) => pipeline.observer?.busRoundTrip(ms), onLost: () => pipeline.observer?.busPingLost() });
    roundTrip.start();
    opened.push(async () => roundTrip.stop());
    return {
      events: new JetStreamEventStore(log, stored),
      meta: new PgMetaStore(pg),
      deletions,
      erasure: withAttemptLog(new PipelineErasureStore(log, new ClickHouseErasureStore(ch)), deliveries),
      content: new PgContentStore(pg),
      interactions: new ClickHouseInteractionStore(ch),
      webhookEndpoints: new PgWebhookEndpointStore(pg),
      webhookDeliveries: deliveries,
      analytics: new ClickHouseAnalyticsStore(ch, options.polls),
      sessions: new PgSessionStore(pg),
      changes,
      pipeline,
      bus,
      claims,
      sessionDirectory,
      // Ready while ingest can be acknowledged and metadata read: PostgreSQL and the event log.
      // A ClickHouse outage is absorbed by the stream (reads answer 503 meanwhile): taking every
      // node out of the load balancer for it would stop ingest too.
      ping: async () => {
        if (nats.isClosed()) throw new Error('The NATS connection is closed.');
        await Promise.all([pg.ping(), log.position()]);
      },
      memoryBytes: async () => 0,
      refusedWrites: () => 0,
      undecodableEvents: () => 0,
      onUndecodableEvents: () => {},
      close: async () => {
        await pipeline.stop();
        const closed = await closeOpened();
        const failed = closed.find((result): result is PromiseRejectedResult => result.status === 'rejected');
        if (failed) throw failed.reason;
      },
    };
  } catch (error) {
    await closeOpened();
    throw error;
  }
}

/**
 * The erasure of a user's events (after the writer) and then of their webhook deliveries in the
 * attempt log, whose payloads hold the events: the job completes only once both are gone, and a
 * failure of either sends it back to be tried again.
 */
function withAttemptLog(events: UserErasureStore, attempts: PgWebhookDeliveryStore): UserErasureStore {
  return {
    erase: async (job, userId) => {
      const counts = await events.erase(job, userId);
      await attempts.eraseUser(job.tenantSeq, job.userHash, userId);
      return counts;
    },
    rewriteErased: () => events.rewriteErased(),
  };
}

function eventPipeline(
  log: EventLog,
  writerSetup: WriterThreadSetup,
  queue: DeliveryQueue,
  attempts: PgWebhookDeliveryStore,
  tombstones: PgErasureTombstones,
  bus: Bus,
): EventPipeline & { observer: PipelineObserver | null } {
  let writer: EventLogWriterThread | null = null;
  const lag = new ConsumerLagReader(log.manager(), [
    { stream: EVENTS_STREAM, consumer: WRITER_CONSUMER },
    { stream: WEBHOOK_STREAM, consumer: WEBHOOK_CONSUMER },
  ]);
  let tombstonesStarted = false;
  let sweep: AckedMessageSweep | null = null;
  // On the work queue, the dispatcher of every node drops an erased user's deliveries when it
  // meets them: the erasures are read again at once on the node running the job (every second elsewhere).
  bus.subscribe('user.erasing', () => tombstones.refresh());
  const pipeline: EventPipeline & { observer: PipelineObserver | null } = {
    observer: null,
    observe(observer) {
      pipeline.observer = observer;
    },
    consumerLag: () => lag.read(),
    // Safe to call again after a failure: what started already is kept, the rest is started.
    async start(onError) {
      if (!tombstonesStarted) {
        await tombstones.start((error) => onError(error, 'reading the erased users failed'));
        tombstonesStarted = true;
      }
      if (!writer) {
        // Rows a user sent before their erasure under way are not written (the erasure waits for
        // the writer): the thread asks for the unfinished deletion jobs (`jobs`). What it stored
        // goes on the bus, which carries it to every node: live views follow any node's writer.
        const starting = new EventLogWriterThread({
          ...writerSetup,
          onStored: (tenantSeqs) => {
            for (const tenantSeq of tenantSeqs) fanOut(bus, 'events.stored', { tenantSeq });
          },
          onError: (error) => onError(error, 'writing the event log into ClickHouse failed'),
          onBatch: (batch) => pipeline.observer?.writerBatch(batch),
        });
        // Known to `stop` while it starts, which then ends it.
        writer = starting;
        try {
          await starting.start();
        } catch (error) {
          if (writer === starting) writer = null;
          throw error;
        }
        // Stopped meanwhile: nothing more is started.
        if (writer !== starting) return;
      }
      // Acknowledged messages a crash of nats-server left in the streams: the one consumer of each
      // will never deliver them again, and they would keep user data in NATS.
      if (!sweep) {
        sweep = new AckedMessageSweep(log.manager(), [
          { stream: EVENTS_STREAM, consumer: WRITER_CONSUMER },
          { stream: WEBHOOK_STREAM, consumer: WEBHOOK_CONSUMER },
        ], { onError: (error) => onError(error, 'removing acknowledged messages from the streams failed') });
        sweep.start();
      }
    },
    async stop() {
      // Taken at once, so that a start under way sees it was stopped.
      const [stoppingSweep, stoppingWriter] = [sweep, writer];
      sweep = null;
      writer = null;
      await stoppingSweep?.stop();
      tombstones.stop();
      tombstonesStarted = false;
      await stoppingWriter?.stop();
    },
    webhooks: {
      queue,
      log: attempts,
      erased: (delivery) => tombstones.erased(delivery),
    },
  };
  return pipeline;
}
