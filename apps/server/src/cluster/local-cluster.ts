import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  aptGetLine,
  ENGINES,
  freePort,
  missingEngines,
  startClickHouse,
  startHaproxy,
  startNatsCluster,
  startPostgres,
  type ClickHouseServer,
  type Engine,
  type LoadBalancer,
  type NatsCluster,
  type PostgresServer,
} from '@svc/engines';
import { startSvcNode, type SvcNodeProcess } from './svc-node-process';

/** Svc nodes, and NATS servers (each stream replicated on all of them). */
export const LOCAL_CLUSTER_SIZE = 3;
/** Ack wait of the nodes' writers (default 60 s): how long events a dead node held wait for another. */
const LOCAL_WRITER_ACK_WAIT_MS = 15_000;
/** How long the first node has to load the demo tenant's sample data. */
const SAMPLE_DATA_WAIT_MS = 180_000;
/** How long each node and then the load balancer have to answer `/readyz` with 200. */
const READY_WAIT_MS = 60_000;

/** Engines this machine lacks: their names and the one `apt-get install` line that brings them all. */
export class MissingEnginesError extends Error {
  constructor(readonly missing: Engine[]) {
    super(
      `Missing: ${missing.map((engine) => `${engine.name} (${engine.path})`).join(', ')}.\n` +
        `Install with:\n  ${aptGetLine(missing)}`,
    );
    this.name = 'MissingEnginesError';
  }
}

export interface LocalClusterOptions {
  /** Port of the load balancer on 127.0.0.1. */
  port: number;
  /** Folder of every engine's and node's data, kept on stop; default a temporary one removed on stop. */
  dataDir?: string;
  /** Told of each step. */
  progress(line: string): void;
}

export interface LocalCluster {
  /** The load balancer's address: the cluster's one entry. */
  url: string;
  /** The demo tenant's public API key and admin token (dashboard sign-in). */
  apiKey: string;
  adminToken: string;
  dataDir: string;
  /** Whether `stop` removes `dataDir`. */
  temporaryData: boolean;
  /** Every process started, by name (`haproxy`, `node-1`, `nats-1`, `postgres`, …), with its pid. */
  processes(): { name: string; pid: number }[];
  /** Drains and stops the nodes, then the load balancer and the engines; removes a temporary data folder. */
  stop(): Promise<void>;
}

interface Credentials {
  apiKey: string;
  adminToken: string;
}

const base62 = (bytes: Buffer) => bytes.toString('base64').replace(/[^0-9A-Za-z]/g, '').slice(0, 32);

/** The demo tenant's credentials: made once per data folder, so that a kept folder signs in as before. */
function demoCredentials(dataDir: string): Credentials {
  const file = join(dataDir, 'demo-credentials.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Credentials;
  const random = () => {
    for (;;) {
      const text = base62(randomBytes(48));
      if (text.length === 32) return text;
    }
  };
  const credentials = { apiKey: `svc_pk_${random()}`, adminToken: `svc_sk_${random()}` };
  writeFileSync(file, JSON.stringify(credentials), { mode: 0o600 });
  return credentials;
}

async function until(what: string, check: () => Promise<boolean>, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function ready(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) })).status === 200;
  } catch {
    return false;
  }
}

/**
 * Starts a whole cluster on this machine: a NATS cluster of {@link LOCAL_CLUSTER_SIZE} servers,
 * PostgreSQL and ClickHouse (the test harnesses' engines), {@link LOCAL_CLUSTER_SIZE} Svc nodes
 * on them and HAProxy in front; the first node creates the demo tenant and loads its sample
 * data. Throws {@link MissingEnginesError} before starting anything when an engine is missing.
 * Whatever started is stopped again when a later step fails.
 */
export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const missing = missingEngines(Object.values(ENGINES));
  if (missing.length > 0) throw new MissingEnginesError(missing);
  if (!(await portFree(options.port))) throw new Error(`Port ${options.port} on 127.0.0.1 is in use: choose another with --port.`);

  const temporaryData = options.dataDir === undefined;
  const dataDir = options.dataDir === undefined ? mkdtempSync(join(tmpdir(), 'svc-cluster-')) : resolve(options.dataDir);
  mkdirSync(dataDir, { recursive: true });
  // PostgreSQL runs as its own OS user when we are root: it must be able to reach its folder.
  if (temporaryData) chmodSync(dataDir, 0o711);
  const credentials = demoCredentials(dataDir);
  const url = `http://127.0.0.1:${options.port}`;

  let postgres: PostgresServer | undefined;
  let nats: NatsCluster | undefined;
  let clickhouse: ClickHouseServer | undefined;
  let balancer: LoadBalancer | undefined;
  const nodes: SvcNodeProcess[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Nodes first: they finish their requests, drain their sockets and write what they hold
      // while the engines still run.
      await Promise.all(nodes.map((node) => node.stop()));
      await balancer?.stop();
      await Promise.allSettled([nats?.stop(), clickhouse?.stop(), postgres?.stop()]);
      if (temporaryData) rmSync(dataDir, { recursive: true, force: true });
    })());

  try {
    options.progress(`Starting PostgreSQL, ClickHouse and ${LOCAL_CLUSTER_SIZE} NATS servers…`);
    const engines = await Promise.allSettled([
      startPostgres({ dir: join(dataDir, 'postgres') }),
      startNatsCluster(LOCAL_CLUSTER_SIZE, { dir: join(dataDir, 'nats'), ownProcessGroup: true }),
      startClickHouse({ dir: join(dataDir, 'clickhouse'), ownProcessGroup: true }),
    ]);
    if (engines[0].status === 'fulfilled') postgres = engines[0].value;
    if (engines[1].status === 'fulfilled') nats = engines[1].value;
    if (engines[2].status === 'fulfilled') clickhouse = engines[2].value;
    for (const engine of engines) if (engine.status === 'rejected') throw engine.reason;

    const nodeEnv = (i: number): Record<string, string> => ({
      SVC_NODE_ID: `node-${i}`,
      SVC_DATA_DIR: join(dataDir, `node-${i}`),
      SVC_POSTGRES_URL: postgres!.url,
      SVC_NATS_URL: nats!.urls,
      SVC_NATS_REPLICAS: String(LOCAL_CLUSTER_SIZE),
      SVC_CLICKHOUSE_URL: `${clickhouse!.url}/svc`,
      SVC_BOOTSTRAP_API_KEY: credentials.apiKey,
      SVC_BOOTSTRAP_ADMIN_TOKEN: credentials.adminToken,
      SVC_PUBLIC_URL: url,
      // Not a line per health check (one a second per node) in the logs, unless asked for.
      SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL || 'warn',
      // Every request comes through the load balancer: the viewer's address is in X-Forwarded-For.
      SVC_TRUST_PROXY: 'loopback',
      // Someone trying the cluster kills a node: the events it held are written by another
      // within seconds, not after the default minute.
      SVC_WRITER_ACK_WAIT_MS: String(LOCAL_WRITER_ACK_WAIT_MS),
      // The demo tenant's sample data is loaded once, by the node that creates the tenant.
      SVC_SAMPLE_DATA: i === 1 ? 'true' : 'false',
    });
    const ports: number[] = [];
    for (let i = 1; i <= LOCAL_CLUSTER_SIZE; i++) ports.push(await freePort());
    const startNode = async (i: number) => {
      const node = await startSvcNode(`node-${i}`, ports[i - 1]!, nodeEnv(i), join(dataDir, 'logs', `node-${i}.log`));
      nodes.push(node);
      return node;
    };
    options.progress(`Starting ${LOCAL_CLUSTER_SIZE} Svc nodes…`);
    // The first node alone: it creates the demo tenant (with the others starting at once, any
    // of them could, and only the first loads sample data).
    const first = await startNode(1);
    await Promise.all(Array.from({ length: LOCAL_CLUSTER_SIZE - 1 }, (_, i) => startNode(i + 2)));
    if (first.output().includes('Created tenant "demo"')) {
      options.progress('Loading the demo tenant\'s sample data…');
      await first.printed('sample events into tenant "demo"', SAMPLE_DATA_WAIT_MS);
    }
    for (const node of nodes) await until(`${node.name} ready`, () => ready(node.url), READY_WAIT_MS);

    options.progress('Starting HAProxy…');
    balancer = await startHaproxy(
      options.port,
      nodes.map((node) => ({ name: node.name, address: `127.0.0.1:${node.port}` })),
      { dir: join(dataDir, 'haproxy'), ownProcessGroup: true },
    );
    await until('the load balancer ready', () => ready(url), READY_WAIT_MS);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    url,
    ...credentials,
    dataDir,
    temporaryData,
    processes() {
      const named = [
        { name: 'haproxy', pid: balancer?.pid() },
        ...nodes.map((node) => ({ name: node.name, pid: node.pid })),
        ...(nats?.nodes ?? []).map((server, i) => ({ name: `nats-${i + 1}`, pid: server.pid() })),
        { name: 'clickhouse', pid: clickhouse?.pid() },
        ...(postgres?.pids() ?? []).slice(0, 1).map((pid) => ({ name: 'postgres', pid })),
      ];
      return named.filter((entry): entry is { name: string; pid: number } => entry.pid !== undefined);
    },
    stop,
  };
}
