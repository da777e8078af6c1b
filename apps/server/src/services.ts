import { AnalyticsService, LiveOverviewFeed } from '@svc/analytics';
import { ContentService, PollCatalogue } from '@svc/content';
import { ExportService } from '@svc/export';
import { CountryResolver, GroupCommitter, IngestService } from '@svc/ingest';
import { DeletionService, ErasurePurger, RetentionPurger } from '@svc/lifecycle';
import { LiveViewerRegistry, LocalBus, SvcError, systemClock, type Bus, type Clock } from '@svc/protocol';
import { followMetadataChanges } from './follow-metadata-changes';
import { openClusterStorage, openEmbeddedStorage, openEventClusterStorage, type PollLookup, type Storage } from '@svc/storage';
import { TenantService } from '@svc/tenancy';
import { HttpWebhookSender, QueueDispatcher, WebhookDispatcher, WebhookService, WORKING_INTERVAL_MS, type ResolveHost, type WebhookSender } from '@svc/webhooks';
import type { ServerConfig } from './config';
import { ServerMetrics } from './metrics';

/** Pause between attempts to start full cluster mode's writer and webhook dispatcher. */
export const PIPELINE_RETRY_MS = 5_000;

/** Everything the HTTP layer calls into; built once per process. */
export interface Services {
  config: ServerConfig;
  clock: Clock;
  storage: Storage;
  tenants: TenantService;
  committer: GroupCommitter;
  ingest: IngestService;
  countries: CountryResolver;
  metrics: ServerMetrics;
  exports: ExportService;
  /** The one bus every part publishes on and subscribes to: the storage's bus between nodes in full cluster mode (`NatsBus`), else in process (`LocalBus`). */
  bus: Bus;
  /** Where the gateway provides the live viewer counts the dashboard reads. */
  liveViewers: LiveViewerRegistry;
  content: ContentService;
  webhooks: WebhookService;
  /** The embedded outbox's dispatcher, or the work queue's in full cluster mode. */
  dispatcher: WebhookDispatcher | QueueDispatcher;
  analytics: AnalyticsService;
  /** The dashboard's live mode (`GET /v1/analytics/live` streams it). */
  liveOverview: LiveOverviewFeed;
  deletions: DeletionService;
  retention: RetentionPurger;
  /** Removes erased users' bytes from the database files within `config.erasureMaxDelaySeconds`. */
  erasurePurger: ErasurePurger;
  /**
   * Starts the deletion worker (resuming unfinished jobs), the purge of erased data from the
   * files, the hourly retention purge, webhook dispatch and the dashboard store's compaction.
   * Failures of deletion jobs, purges and compactions go to `onError` with a line saying what failed.
   */
  startBackgroundWork(onError?: (error: unknown, what: string) => void): void;
  closeWebhooks(): Promise<void>;
  /** Throws when the service cannot take work (readiness). */
  ready(): Promise<void>;
}

export interface ServiceOverrides {
  clock?: Clock;
  /** Storage opened by the caller (its `bus`, if any, is the services' bus). */
  storage?: Storage;
  /** Random source of retry jitter. */
  random?: () => number;
  webhookSender?: WebhookSender;
  /** How webhook hosts are resolved, when saved and at each connection (DNS by default). */
  resolveHost?: ResolveHost;
}

export async function createServices(config: ServerConfig, overrides: ServiceOverrides = {}): Promise<Services> {
  const clock = overrides.clock ?? systemClock;
  // Votes are checked against their poll in memory, never with a query per event; the
  // dashboard on ClickHouse names the polls from it too.
  const polls = new PollCatalogue();
  const storage = overrides.storage ?? (await openStorage(config, polls));
  // Full cluster mode's storage carries the bus between nodes; the other modes keep it in process.
  // Failures background work survives go where startBackgroundWork says (the app's log).
  let reportBackground: (error: unknown, what: string) => void = (error, what) => console.error(what, error);
  const bus: Bus = storage.bus ?? new LocalBus({ onSubscriberError: (error, topic) => reportBackground(error, `a subscriber of ${topic} failed`) });
  await polls.load(storage.content);
  const metrics = new ServerMetrics(config.nodeId);
  metrics.watchDatabaseMemory(() => storage.memoryBytes());
  if (storage.pipeline) metrics.watchPipeline(storage.pipeline);
  metrics.watchRefusedWrites(() => storage.refusedWrites());
  metrics.watchUndecodableRows(() => storage.undecodableEvents());
  // On the JetStream event log each request is its own message, recognised when retried.
  const committer = new GroupCommitter(storage.events, metrics, { group: !storage.pipeline });
  const deletions = new DeletionService(storage.deletions, storage.erasure, clock, undefined, undefined, undefined, { leaseMs: config.deletionLeaseMs }, bus);
  const sender = overrides.webhookSender ?? new HttpWebhookSender(config.webhookAllowPrivate, undefined, overrides.resolveHost);
  const webhooks = new WebhookService(storage.webhookEndpoints, storage.webhookDeliveries, sender, { allowPrivate: config.webhookAllowPrivate, resolveHost: overrides.resolveHost }, clock);
  /**
   * Full cluster mode's writer and webhook dispatcher start with the background work; a start
   * that fails (an engine blinked) is tried again until it succeeds or the node stops.
   */
  const pipeline = { starting: false, stopping: false };
  const startPipeline = async (events: NonNullable<Storage['pipeline']>, onError: (error: unknown, what: string) => void) => {
    pipeline.starting = true;
    while (!pipeline.stopping) {
      try {
        await events.start(onError);
        if (pipeline.stopping) break;
        void dispatcher.start();
        break;
      } catch (error) {
        onError(error, `the event pipeline did not start; trying again in ${PIPELINE_RETRY_MS / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, PIPELINE_RETRY_MS));
      }
    }
    pipeline.starting = false;
  };
  const queue = storage.pipeline?.webhooks;
  const dispatcher = queue
    ? new QueueDispatcher(queue.queue, queue.log, webhooks, sender, {
        clock,
        random: overrides.random,
        observer: metrics,
        erased: queue.erased,
        // Deliveries waiting for their turn are reported as worked on well within the queue's ack wait.
        workingIntervalMs: Math.min(WORKING_INTERVAL_MS, config.webhookAckWaitMs / 3),
        onError: (error) => reportBackground(error, 'webhook work queue failed'),
      })
    : new WebhookDispatcher(storage.webhookDeliveries, webhooks, sender, clock, overrides.random ?? Math.random, metrics, bus);
  await webhooks.start(dispatcher);
  const erasurePurger = new ErasurePurger(storage.deletions, storage.erasure, config.erasureMaxDelaySeconds * 1000, clock, undefined, bus);
  const retention = new RetentionPurger(storage.meta, storage.events, clock, metrics, () => webhooks.purgeLogs());
  // In full cluster mode events become readable when a writer stored them, not at this commit.
  const ingest = new IngestService(storage.meta, storage.events, committer, clock, metrics, webhooks, polls, bus, !storage.pipeline);
  const liveViewers = new LiveViewerRegistry();
  const analytics = new AnalyticsService(storage.analytics, clock, liveViewers);
  const services: Services = {
    config,
    clock,
    storage,
    tenants: new TenantService(storage.meta, clock, undefined, bus),
    committer,
    ingest,
    countries: CountryResolver.embedded(),
    metrics,
    exports: new ExportService(storage.events, clock),
    bus,
    liveViewers,
    webhooks,
    dispatcher,
    analytics,
    liveOverview: new LiveOverviewFeed(bus, analytics),
    content: new ContentService(storage.content, storage.interactions, bus, clock, undefined, polls),
    deletions,
    retention,
    erasurePurger,
    startBackgroundWork: (onError = () => {}) => {
      reportBackground = onError;
      deletions.start((error, job) => onError(error, job ? `deletion job ${job.id} failed` : 'deletion worker failed'));
      retention.start();
      const purgeFailed = (error: unknown) => onError(error, 'purge of erased data failed');
      erasurePurger.start({ purged: () => {}, failed: purgeFailed }).catch(purgeFailed);
      analytics.startMaintenance((error) => onError(error, 'dashboard store compaction failed'));
      if (storage.pipeline) void startPipeline(storage.pipeline, onError);
      else void dispatcher.start();
    },
    closeWebhooks: async () => {
      pipeline.stopping = true;
      await dispatcher.stop();
      await sender.close();
    },
    ready: async () => {
      await storage.ping();
      // A node whose writer and webhook dispatcher did not start yet takes no traffic.
      if (pipeline.starting) throw new SvcError('not_ready', 'The event pipeline is starting.');
    },
  };
  // Caches of metadata follow the changes other nodes make (cluster mode) or this one (embedded).
  followMetadataChanges(storage.changes, services);
  return services;

}

/**
 * The storage `config` asks for: full cluster mode when it names NATS and ClickHouse (beside
 * PostgreSQL), metadata in PostgreSQL with the events in this node's file when it names only
 * PostgreSQL, else the embedded file.
 */
function openStorage(config: ServerConfig, polls: PollLookup): Promise<Storage> {
  const duckDb = { memoryLimit: config.databaseMemoryLimit, threads: config.databaseThreads };
  if (!config.postgresUrl) return openEmbeddedStorage(config.dataDir, duckDb);
  if (config.natsServers && config.clickhouseUrl) {
    return openEventClusterStorage(config.postgresUrl, {
      natsServers: config.natsServers,
      natsReplicas: config.natsReplicas,
      clickhouseUrl: config.clickhouseUrl,
      polls,
      nodeId: config.nodeId,
      postgres: { poolSize: config.postgresPoolSize },
      writerAckWaitMs: config.writerAckWaitMs,
      webhookAckWaitMs: config.webhookAckWaitMs,
      onStartupRetry: (error, retryInMs) => console.error(`svc: ${error.message} Trying again in ${retryInMs} ms.`),
    });
  }
  return openClusterStorage(config.dataDir, config.postgresUrl, { ...duckDb, postgres: { poolSize: config.postgresPoolSize } });
}

/** Stops background work, commits what is queued, then closes the stores. */
export async function closeServices(services: Services): Promise<void> {
  services.liveOverview.close();
  await services.retention.stop();
  await services.analytics.stopMaintenance();
  await services.deletions.stop();
  await services.erasurePurger.stop();
  await services.closeWebhooks();
  await services.committer.close();
  await services.storage.close();
}
