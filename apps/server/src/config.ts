import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { DEFAULT_DELETION_LEASE_MS, DEFAULT_ERASURE_MAX_DELAY_S } from '@svc/lifecycle';
import type { GatewayOptions } from '@svc/realtime';
import { DEFAULT_ACK_WAIT_MS, WRITER_ACK_WAIT_MS } from '@svc/storage';

/** Everything the server reads from its environment, with the defaults of DESIGN section 3. */
export interface ServerConfig {
  port: number;
  host: string;
  dataDir: string;
  /** DuckDB's memory limit (its cache and working memory), e.g. `512MB`; DuckDB's default (80% of RAM) when unset. */
  databaseMemoryLimit?: string;
  /** Threads one database query may use; the storage default (1) when unset. */
  databaseThreads?: number;
  publicUrl: string;
  bootstrapApiKey?: string;
  bootstrapAdminToken?: string;
  webhookAllowPrivate: boolean;
  /** Trusted proxy header carrying the viewer's country, lower-cased; null when none. */
  countryHeader: string | null;
  logLevel: string;
  /** Honour X-Forwarded-For from these proxies (Fastify `trustProxy`): true, or a comma list of addresses/CIDRs. */
  trustProxy: boolean | string;
  rateLimit: RateLimitConfig;
  processingRegion: string;
  /** Fill a newly created demo tenant with sample activity. */
  sampleData: boolean;
  /** Realtime gateway settings (defaults in @svc/realtime's DEFAULT_GATEWAY_OPTIONS). */
  realtime: Partial<GatewayOptions>;
  /** Longest time from a deletion job's completion to the purge of its bytes from every file, s. */
  erasureMaxDelaySeconds: number;
  /**
   * Cluster mode: the PostgreSQL database holding the metadata (tenants, credentials, content,
   * webhook endpoints, deletion jobs, dashboard sessions), shared by every node; the events stay
   * in `dataDir`. Unset: everything in `dataDir` (the embedded default).
   */
  postgresUrl?: string;
  /** Connections this node keeps to PostgreSQL; the storage default when unset. */
  postgresPoolSize?: number;
  /**
   * Full cluster mode, with `postgresUrl` and `clickhouseUrl`: the NATS servers (JetStream) that
   * carry accepted events to the writers, the webhook work queue and the notices between nodes.
   */
  natsServers?: string[];
  /** Replicas of the JetStream streams (3 in production on a 3-server NATS cluster). */
  natsReplicas: number;
  /**
   * Full cluster mode: the ClickHouse HTTP(S) endpoint holding the events, the quarantine and the
   * dashboard's data; the database is the URL's path (`/svc` by default: `DEFAULT_CLICKHOUSE_DATABASE`).
   */
  clickhouseUrl?: string;
  /** This node's name in the cluster (NATS's connection list); host name and pid when unset. */
  nodeId: string;
  /**
   * Full cluster mode: how long messages a writer fetched from the stream EVENTS may stay
   * unacknowledged before JetStream gives them to another writer (after a node dies), ms.
   */
  writerAckWaitMs: number;
  /** Full cluster mode: the same for deliveries a dispatcher took from the work queue WEBHOOKS, ms. */
  webhookAckWaitMs: number;
  /** How long a node's claim on a deletion job lasts unless renewed: a job whose node died is resumed this long after, ms. */
  deletionLeaseMs: number;
}

/** JetStream stream replicas when `SVC_NATS_REPLICAS` is unset: one NATS server is enough to try cluster mode. */
export const DEFAULT_NATS_REPLICAS = 1;

export interface RateLimitConfig {
  /** Sustained requests per second per API key or admin token; 0 turns the limit off. */
  perKeyPerSecond: number;
  /** Sustained requests per second per client address for public routes; 0 turns it off. */
  perIpPerSecond: number;
  /** Bucket size as a multiple of the rate: how long a burst may last, in seconds. */
  burstSeconds: number;
}

export const DEFAULT_PORT = 8080;
/**
 * A large live broadcast sends most events over the WebSocket; the HTTP fallback of a few
 * hundred thousand viewers flushing every few seconds stays under this per key.
 */
export const DEFAULT_RATE_LIMIT_PER_KEY_PER_SECOND = 10_000;
/** Viewers behind one carrier NAT share an address, so the per-address limit is not tight. */
export const DEFAULT_RATE_LIMIT_PER_IP_PER_SECOND = 300;
export const DEFAULT_RATE_LIMIT_BURST_SECONDS = 2;

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): ServerConfig {
  const port = integer(env, 'PORT', DEFAULT_PORT, 0, 65_535);
  const host = env.HOST || '127.0.0.1';
  return {
    port,
    host,
    dataDir: resolve(env.SVC_DATA_DIR || './data'),
    databaseMemoryLimit: memorySize(env, 'SVC_DB_MEMORY_LIMIT'),
    databaseThreads: env.SVC_DB_THREADS ? integer(env, 'SVC_DB_THREADS', 1, 1, 256) : undefined,
    publicUrl: (env.SVC_PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    bootstrapApiKey: env.SVC_BOOTSTRAP_API_KEY || undefined,
    bootstrapAdminToken: env.SVC_BOOTSTRAP_ADMIN_TOKEN || undefined,
    webhookAllowPrivate: boolean(env, 'SVC_WEBHOOK_ALLOW_PRIVATE'),
    countryHeader: env.SVC_COUNTRY_HEADER ? env.SVC_COUNTRY_HEADER.toLowerCase() : null,
    logLevel: env.SVC_LOG_LEVEL || 'info',
    trustProxy: trustProxy(env.SVC_TRUST_PROXY),
    rateLimit: {
      perKeyPerSecond: integer(env, 'SVC_RATE_LIMIT_PER_KEY', DEFAULT_RATE_LIMIT_PER_KEY_PER_SECOND, 0, 10_000_000),
      perIpPerSecond: integer(env, 'SVC_RATE_LIMIT_PER_IP', DEFAULT_RATE_LIMIT_PER_IP_PER_SECOND, 0, 10_000_000),
      burstSeconds: DEFAULT_RATE_LIMIT_BURST_SECONDS,
    },
    processingRegion: env.SVC_PROCESSING_REGION || 'EU',
    sampleData: env.SVC_SAMPLE_DATA === undefined ? true : boolean(env, 'SVC_SAMPLE_DATA'),
    realtime: {
      ...optionalInteger(env, 'SVC_WS_HEARTBEAT_MS', 'heartbeatIntervalMs', 1_000, 600_000),
      ...optionalInteger(env, 'SVC_WS_RESUME_GRACE_MS', 'resumeGraceMs', 0, 3_600_000),
      ...optionalInteger(env, 'SVC_WS_MAX_CONNECTIONS_PER_TENANT', 'maxConnectionsPerTenant', 1, 10_000_000),
      ...optionalInteger(env, 'SVC_WS_MAX_CONNECTIONS_PER_ADDRESS', 'maxConnectionsPerAddress', 1, 10_000_000),
      ...optionalInteger(env, 'SVC_WS_ADDRESS_SHARE_PERCENT', 'addressSharePercent', 1, 99),
      ...optionalInteger(env, 'SVC_WS_UPGRADES_PER_ADDRESS', 'upgradesPerAddressPerSecond', 0, 1_000_000),
      ...optionalInteger(env, 'SVC_WS_UPGRADE_BURST', 'upgradeBurst', 1, 10_000_000),
      ...optionalInteger(env, 'SVC_WS_BAD_KEY_UPGRADE_COST', 'badKeyUpgradeCost', 1, 10_000),
      ...optionalInteger(env, 'SVC_WS_MAX_OVER_RATE_MS', 'maxOverRateMs', 100, 600_000),
    },
    erasureMaxDelaySeconds: integer(env, 'SVC_ERASURE_MAX_DELAY_S', DEFAULT_ERASURE_MAX_DELAY_S, 0, 30 * 24 * 3600),
    postgresUrl: postgresUrl(env, 'SVC_POSTGRES_URL'),
    postgresPoolSize: env.SVC_POSTGRES_POOL_SIZE ? integer(env, 'SVC_POSTGRES_POOL_SIZE', 1, 1, 1_000) : undefined,
    ...eventSide(env),
    deletionLeaseMs: integer(env, 'SVC_DELETION_LEASE_MS', DEFAULT_DELETION_LEASE_MS, 1_000, 3_600_000),
  };
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be a whole number from ${min} to ${max}; got "${raw}".`);
  }
  return value;
}

function optionalInteger<K extends keyof GatewayOptions>(env: Env, name: string, key: K, min: number, max: number): Partial<GatewayOptions> {
  return env[name] ? { [key]: integer(env, name, 0, min, max) } : {};
}

/** A size such as `512MB` or `2GiB`, as DuckDB's memory_limit takes it. */
function memorySize(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!/^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(raw)) {
    throw new Error(`${name} must be a size such as 512MB or 2GiB; got "${raw}".`);
  }
  return raw;
}

function boolean(env: Env, name: string): boolean {
  const raw = (env[name] ?? '').toLowerCase();
  return raw === '1' || raw === 'true' || raw === 'yes';
}

function trustProxy(raw: string | undefined): boolean | string {
  if (!raw || raw === 'false') return false;
  if (raw === 'true') return true;
  return raw;
}

/** A `postgres://` or `postgresql://` URL naming a host; the message never repeats a password. */
function postgresUrl(env: Env, name: string): string | undefined {
  return serverUrl(env, name, ['postgres:', 'postgresql:'], 'a PostgreSQL URL such as postgres://user:password@host:5432/svc');
}

/**
 * The value of `name` when it is a URL of one of `protocols` naming a host; else an error saying
 * it must be `what` (never repeating the value: it may hold a password).
 */
function serverUrl(env: Env, name: string, protocols: string[], what: string): string | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!isServerUrl(raw, protocols)) throw new Error(`${name} must be ${what}.`);
  return raw;
}

function isServerUrl(raw: string, protocols: string[]): boolean {
  try {
    const parsed = new URL(raw);
    return protocols.includes(parsed.protocol) && Boolean(parsed.hostname);
  } catch {
    return false;
  }
}

/**
 * The event side of cluster mode: NATS and ClickHouse come together, and only with PostgreSQL
 * (every node must share the metadata the events refer to). Messages never repeat a URL: it may
 * hold a password.
 */
function eventSide(env: Env): Pick<ServerConfig, 'natsServers' | 'natsReplicas' | 'clickhouseUrl' | 'nodeId' | 'writerAckWaitMs' | 'webhookAckWaitMs'> {
  const natsServers = natsUrls(env, 'SVC_NATS_URL');
  const clickhouseUrl = httpUrl(env, 'SVC_CLICKHOUSE_URL');
  if (Boolean(natsServers) !== Boolean(clickhouseUrl)) {
    throw new Error('SVC_NATS_URL and SVC_CLICKHOUSE_URL go together: set both (events through NATS JetStream into ClickHouse) or neither.');
  }
  if (natsServers && !env.SVC_POSTGRES_URL?.trim()) {
    throw new Error('SVC_NATS_URL and SVC_CLICKHOUSE_URL need SVC_POSTGRES_URL: the nodes share their metadata in PostgreSQL.');
  }
  return {
    natsServers,
    natsReplicas: integer(env, 'SVC_NATS_REPLICAS', DEFAULT_NATS_REPLICAS, 1, 5),
    clickhouseUrl,
    nodeId: env.SVC_NODE_ID?.trim() || `${hostname()}-${process.pid}`,
    writerAckWaitMs: integer(env, 'SVC_WRITER_ACK_WAIT_MS', WRITER_ACK_WAIT_MS, 1_000, 3_600_000),
    webhookAckWaitMs: integer(env, 'SVC_WEBHOOK_ACK_WAIT_MS', DEFAULT_ACK_WAIT_MS, 1_000, 3_600_000),
  };
}

/** A comma list of `nats://` (or `tls://`) server URLs. */
function natsUrls(env: Env, name: string): string[] | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const urls = raw.split(',').map((part) => part.trim()).filter(Boolean);
  const valid = urls.length > 0 && urls.every((url) => isServerUrl(url, ['nats:', 'tls:']));
  if (!valid) throw new Error(`${name} must be a comma list of NATS URLs such as nats://nats-1:4222,nats://nats-2:4222.`);
  return urls;
}

/** An `http://` or `https://` URL naming a host. */
function httpUrl(env: Env, name: string): string | undefined {
  return serverUrl(env, name, ['http:', 'https:'], 'a ClickHouse HTTP URL such as http://user:password@clickhouse:8123/svc');
}
