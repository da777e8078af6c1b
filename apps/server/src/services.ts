import { ContentService } from '@svc/content';
import { ExportService } from '@svc/export';
import { CountryResolver, GroupCommitter, IngestService } from '@svc/ingest';
import { DeletionService, RetentionPurger } from '@svc/lifecycle';
import { systemClock, type Clock } from '@svc/protocol';
import { LocalBus, type Bus } from '@svc/realtime';
import { openEmbeddedStorage, type Storage } from '@svc/storage';
import { TenantService } from '@svc/tenancy';
import type { ServerConfig } from './config';
import { ServerMetrics } from './metrics';

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
  bus: Bus;
  content: ContentService;
  deletions: DeletionService;
  retention: RetentionPurger;
  /** Starts the deletion worker (resuming unfinished jobs) and the hourly retention purge. */
  startBackgroundWork(): void;
  /** Throws when the service cannot take work (readiness). */
  ready(): Promise<void>;
}

export interface ServiceOverrides {
  clock?: Clock;
  storage?: Storage;
}

export async function createServices(config: ServerConfig, overrides: ServiceOverrides = {}): Promise<Services> {
  const clock = overrides.clock ?? systemClock;
  const storage = overrides.storage ?? (await openEmbeddedStorage(config.dataDir));
  const metrics = new ServerMetrics();
  const committer = new GroupCommitter(storage.events, metrics);
  const deletions = new DeletionService(storage.deletions, clock);
  const retention = new RetentionPurger(storage.meta, storage.events, clock, metrics);
  const ingest = new IngestService(storage.meta, storage.events, committer, clock, metrics);
  const bus = new LocalBus();
  return {
    config,
    clock,
    storage,
    tenants: new TenantService(storage.meta, clock),
    committer,
    ingest,
    countries: CountryResolver.embedded(),
    metrics,
    exports: new ExportService(storage.events, clock),
    bus,
    content: new ContentService(storage.content, bus, clock, undefined, (tenantSeq, broadcastId) => ingest.forgetBroadcast(tenantSeq, broadcastId)),
    deletions,
    retention,
    startBackgroundWork: () => {
      deletions.start();
      retention.start();
    },
    ready: () => storage.ping(),
  };
}

/** Stops background work, commits what is queued, then closes the stores. */
export async function closeServices(services: Services): Promise<void> {
  await services.retention.stop();
  await services.deletions.stop();
  await services.committer.close();
  await services.storage.close();
}
