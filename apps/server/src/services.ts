import { CountryResolver, GroupCommitter, IngestService } from '@svc/ingest';
import { systemClock, type Clock } from '@svc/protocol';
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
  return {
    config,
    clock,
    storage,
    tenants: new TenantService(storage.meta, clock),
    committer,
    ingest: new IngestService(storage.meta, storage.events, committer, clock, metrics),
    countries: CountryResolver.embedded(),
    metrics,
    ready: () => storage.ping(),
  };
}

/** Commits what is queued, then closes the stores. */
export async function closeServices(services: Services): Promise<void> {
  await services.committer.close();
  await services.storage.close();
}
