import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HAPROXY_BIN } from './engine-binaries';
import type { EngineOptions } from './engine-options';

/** How long a started HAProxy has to answer on its port. */
const READY_WAIT_MS = 10_000;
/** Interval of the health checks of each backend (`GET /readyz`). */
export const HEALTH_CHECK_INTERVAL_MS = 1_000;
/**
 * How long one check may take: `/readyz` asks every engine, which on a busy machine may take
 * over a second; a node that is merely slow stays in.
 */
const HEALTH_CHECK_TIMEOUT_S = 3;
/** Failed checks in a row that take a backend out; passed checks that bring it back. */
const HEALTH_CHECK_FALL = 3;
const HEALTH_CHECK_RISE = 2;
/** How long an idle WebSocket may stay open through the proxy: longer than the gateway's heartbeat. */
const WEBSOCKET_IDLE_TIMEOUT_S = 3_600;

export interface LoadBalancerBackend {
  name: string;
  /** `127.0.0.1:PORT` */
  address: string;
}

/**
 * The service's own problem for "no node can answer": what HAProxy sends itself when no node is
 * ready (503), a node died in the middle of a request (502) or did not answer in time (504).
 * Clients get problem+json with a stable code and `Retry-After`, as from a node, and retry.
 */
export const NO_NODE_PROBLEM = {
  type: 'urn:svc:error:not_ready',
  title: 'Service not ready',
  status: 503,
  detail: 'No Svc node can answer right now: try again.',
  code: 'not_ready',
} as const;
/** Seconds a client is asked to wait before trying again, as the nodes' own 503 answers. */
export const NO_NODE_RETRY_AFTER_S = 5;
/** The file name, in HAProxy's folder, of the complete HTTP answer HAProxy sends for 502, 503 and 504. */
export const NO_NODE_ERRORFILE = 'no-node.http';
/** HAProxy's codes that {@link NO_NODE_ERRORFILE} replaces. */
export const NO_NODE_CODES = [502, 503, 504] as const;

/** The contents of {@link NO_NODE_ERRORFILE}: a whole HTTP/1.1 answer (HAProxy's `errorfile`). */
export function noNodeResponse(): string {
  const body = JSON.stringify(NO_NODE_PROBLEM);
  return [
    'HTTP/1.1 503 Service Unavailable',
    'Content-Type: application/problem+json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Retry-After: ${NO_NODE_RETRY_AFTER_S}`,
    'Cache-Control: no-store',
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** The file name of HAProxy's admin socket in its folder (`show stat` tells each backend's state). */
export const HAPROXY_SOCKET = 'haproxy.sock';

export interface LoadBalancer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** HAProxy's admin socket (see {@link backendStates}). */
  socketPath: string;
  pid(): number | undefined;
  /** Stops HAProxy (its open connections are cut) and removes its folder unless it was given. */
  stop(): Promise<void>;
}

/**
 * HAProxy's configuration: HTTP mode (which passes WebSocket upgrades through and then tunnels
 * them), connections spread by least open connections (WebSockets are long-lived), each backend
 * checked with `GET /readyz` and taken out after {@link HEALTH_CHECK_FALL} failures, and a request
 * whose connection a dead backend refused sent to another one. What HAProxy answers itself
 * (no node ready, a node gone mid-request, a timeout) is the service's 503 problem with
 * `Retry-After` ({@link noNodeResponse}).
 */
export function haproxyConfig(port: number, backends: LoadBalancerBackend[], socketPath: string, errorFilePath: string): string {
  return [
    // No maxconn: HAProxy derives it from the open-file limit it is given.
    'global',
    `  stats socket ${socketPath} mode 600`,
    'defaults',
    '  mode http',
    '  option forwardfor',
    '  option redispatch',
    '  retries 3',
    '  retry-on conn-failure',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    `  timeout check ${HEALTH_CHECK_TIMEOUT_S}s`,
    `  timeout tunnel ${WEBSOCKET_IDLE_TIMEOUT_S}s`,
    ...NO_NODE_CODES.map((code) => `  errorfile ${code} ${errorFilePath}`),
    'frontend svc',
    `  bind 127.0.0.1:${port}`,
    '  default_backend nodes',
    'backend nodes',
    '  balance leastconn',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    `  default-server inter ${HEALTH_CHECK_INTERVAL_MS} fall ${HEALTH_CHECK_FALL} rise ${HEALTH_CHECK_RISE}`,
    ...backends.map((backend) => `  server ${backend.name} ${backend.address} check`),
    '',
  ].join('\n');
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
}

/** Starts HAProxy on 127.0.0.1:`port` in front of `backends` and waits until it answers. */
export async function startHaproxy(port: number, backends: LoadBalancerBackend[], options: EngineOptions = {}): Promise<LoadBalancer> {
  const home = options.dir ?? mkdtempSync(join(tmpdir(), 'svc-haproxy-'));
  mkdirSync(home, { recursive: true });
  const removeHome = () => {
    if (!options.dir) rmSync(home, { recursive: true, force: true });
  };
  const socketPath = join(home, HAPROXY_SOCKET);
  writeFileSync(join(home, NO_NODE_ERRORFILE), noNodeResponse());
  writeFileSync(join(home, 'haproxy.cfg'), haproxyConfig(port, backends, socketPath, join(home, NO_NODE_ERRORFILE)));
  // -db: in the foreground, so that this process is HAProxy and stopping it stops HAProxy.
  const child: ChildProcess = spawn(HAPROXY_BIN, ['-db', '-f', join(home, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'pipe'], detached: options.ownProcessGroup ?? false });
  let errors = '';
  child.stderr!.on('data', (chunk) => (errors += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_WAIT_MS;
  while (!(await answers(url))) {
    if (child.exitCode !== null) {
      removeHome();
      throw new Error(`haproxy exited at start: ${errors.trim()}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      removeHome();
      throw new Error(`haproxy did not answer on port ${port} within ${READY_WAIT_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    socketPath,
    pid: () => (child.exitCode === null && child.signalCode === null ? child.pid : undefined),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      removeHome();
    },
  };
}

/**
 * The health-check state of each backend server (`UP`, `DOWN`, `UP 1/2`, …) by name, read from
 * the admin socket of a running HAProxy.
 */
export async function backendStates(socketPath: string): Promise<Record<string, string>> {
  const csv = await new Promise<string>((resolve, reject) => {
    let text = '';
    const socket = createConnection(socketPath, () => socket.end('show stat\n'));
    socket.on('data', (chunk) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  const [header, ...rows] = csv.split('\n').filter(Boolean);
  const columns = header!.replace(/^# /, '').split(',');
  const at = (name: string) => columns.indexOf(name);
  const states: Record<string, string> = {};
  for (const row of rows.map((line) => line.split(','))) {
    if (row[at('pxname')] === 'nodes' && !['FRONTEND', 'BACKEND'].includes(row[at('svname')]!)) states[row[at('svname')]!] = row[at('status')]!;
  }
  return states;
}
