import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { inject } from 'vitest';
import type { Clock } from '@svc/protocol';
import type { Storage } from '@svc/storage';
import type { ResolveHost, WebhookSender } from '@svc/webhooks';
import { buildApp } from '../src/app';
import { loadConfig, type ServerConfig } from '../src/config';
import { createServices, type Services } from '../src/services';
import { createDatabaseOn } from '../../../packages/storage/test/postgres-server';

export const API_KEY = `svc_pk_${'TestKeyDemo'.padEnd(32, '0')}`;
export const ADMIN_TOKEN = `svc_sk_${'TestTokenDemo'.padEnd(32, '0')}`;

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  demo: { apiKey: string; adminToken: string; seq: number };
  other: { apiKey: string; adminToken: string; seq: number };
  /** Every log line the app wrote. */
  logs: string[];
  /** Base URL when started with `listen: true`. */
  url: string;
  close(): Promise<void>;
}

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-test-'));
}

/** Connections each test app keeps to PostgreSQL: many apps share one throwaway server. */
const TEST_POSTGRES_POOL_SIZE = 4;

/**
 * The PostgreSQL server test apps run on by default: the one the global setup started when the
 * run has SVC_TEST_POSTGRES=1 (see cluster-postgres-setup.ts), else none (embedded storage).
 */
export function defaultTestPostgres(): string | undefined {
  return process.env.SVC_TEST_POSTGRES ? inject('testPostgresUrl') : undefined;
}

/**
 * A real app on a fresh DuckDB file with tenants `demo` and `other`, driven in-process; on
 * cluster storage (its metadata in a fresh database of its own) when `postgres` names a
 * PostgreSQL server or the run has SVC_TEST_POSTGRES=1.
 */
export async function startTestApp(
  options: {
    config?: Partial<ServerConfig>;
    clock?: Clock;
    listen?: boolean;
    webhookSender?: WebhookSender;
    random?: () => number;
    resolveHost?: ResolveHost;
    /** A closed test app whose data folder (and tenants) this one opens again: a restart. */
    reopen?: TestApp;
    /** URL of a PostgreSQL server to run on (cluster storage); `defaultTestPostgres()` when unset. */
    postgres?: string;
    /** Opens the storage the app runs on instead of the one `config` names (e.g. a backend under test). */
    storage?: (config: ServerConfig) => Promise<Storage>;
  } = {},
): Promise<TestApp> {
  const postgres = options.postgres ?? defaultTestPostgres();
  const postgresUrl = options.reopen
    ? options.reopen.services.config.postgresUrl
    : postgres && (await createDatabaseOn(postgres, `svc_app_${randomBytes(6).toString('hex')}`));
  const config: ServerConfig = {
    ...loadConfig({}),
    dataDir: options.reopen?.services.config.dataDir ?? tempDataDir(),
    ...(postgresUrl ? { postgresUrl, postgresPoolSize: TEST_POSTGRES_POOL_SIZE } : {}),
    logLevel: 'info',
    ...options.config,
    rateLimit: { perKeyPerSecond: 0, perIpPerSecond: 0, burstSeconds: 2, ...options.config?.rateLimit },
  };
  const storage = options.storage ? await options.storage(config) : undefined;
  const services = await createServices(config, { clock: options.clock, webhookSender: options.webhookSender, random: options.random, resolveHost: options.resolveHost, storage });
  const previous = options.reopen;
  const demo = previous ? null : await services.tenants.bootstrap({ apiKey: API_KEY, adminToken: ADMIN_TOKEN });
  const other = previous ? null : await services.tenants.createTenant({ id: 'other', name: 'Other' });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const app = await buildApp(services, { logStream });
  await app.ready();
  let url = '';
  if (options.listen) {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    // The SDK learns the service's addresses from the config: point them at this server.
    services.config.publicUrl = url;
  }
  return {
    url,
    app,
    services,
    demo: previous ? previous.demo : { apiKey: API_KEY, adminToken: ADMIN_TOKEN, seq: demo!.tenant.seq },
    other: previous ? previous.other : { apiKey: other!.apiKey.key, adminToken: other!.adminToken, seq: other!.tenant.seq },
    logs,
    close: () => app.close(),
  };
}
