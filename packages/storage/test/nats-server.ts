import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../../apps/server/test/child-server';

export const NATS_SERVER_BIN = '/usr/sbin/nats-server';
/** How long a started server has to report JetStream healthy. */
const READY_WAIT_MS = 15_000;

export interface NatsServer {
  /** Client URL (`nats://127.0.0.1:PORT`). */
  url: string;
  port: number;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
  /** SIGKILLs the server, as a crash of the host would (its JetStream folder stays for `restart`). */
  kill(): Promise<void>;
  /** Starts the server again on the same ports and folder. */
  restart(): Promise<void>;
}

/**
 * Whether NATS tests can run. In CI a missing server is a failure, never a skip; locally the
 * tests skip with a clear message.
 */
export function natsAvailable(): boolean {
  if (existsSync(NATS_SERVER_BIN)) return true;
  const missing = `${NATS_SERVER_BIN} is missing`;
  if (process.env.CI) throw new Error(`${missing}: .ci/run must install Debian's nats-server package.`);
  console.warn(`Skipping NATS tests: ${missing} (apt-get install nats-server).`);
  return false;
}

async function jetStreamHealthy(monitorPort: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`, { signal: AbortSignal.timeout(1_000) });
    return response.ok;
  } catch {
    return false;
  }
}

/** Starts a throwaway single NATS server with JetStream on free 127.0.0.1 ports, in a folder of its own. */
export async function startNats(): Promise<NatsServer> {
  const home = mkdtempSync(join(tmpdir(), 'svc-nats-'));
  mkdirSync(join(home, 'jetstream'));
  let port = 0;
  let monitorPort = 0;
  let child: ChildProcess | null = null;

  const start = async (): Promise<void> => {
    writeFileSync(
      join(home, 'nats.conf'),
      [
        `listen: 127.0.0.1:${port}`,
        `http: 127.0.0.1:${monitorPort}`,
        `jetstream { store_dir: "${join(home, 'jetstream')}", max_memory_store: 256MB, max_file_store: 4GB }`,
        '',
      ].join('\n'),
    );
    const started = spawn(NATS_SERVER_BIN, ['-c', join(home, 'nats.conf')], { stdio: 'ignore' });
    child = started;
    let exited = false;
    started.once('exit', () => (exited = true));
    const deadline = Date.now() + READY_WAIT_MS;
    while (!(await jetStreamHealthy(monitorPort))) {
      if (exited) throw new Error('nats-server exited at start');
      if (Date.now() > deadline) {
        started.kill('SIGKILL');
        throw new Error(`nats-server did not report JetStream healthy within ${READY_WAIT_MS} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  const killChild = async (): Promise<void> => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };

  // Another process may take a free port before the server binds it: try others.
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    monitorPort = await freePort();
    try {
      await start();
      break;
    } catch (error) {
      await killChild();
      if (attempt === 3) {
        rmSync(home, { recursive: true, force: true });
        throw error;
      }
    }
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    async stop() {
      const running = child;
      child = null;
      if (running && running.exitCode === null && running.signalCode === null) {
        const exited = new Promise((resolve) => running.once('exit', resolve));
        running.kill('SIGTERM');
        const timer = setTimeout(() => running.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(home, { recursive: true, force: true });
    },
    kill: killChild,
    async restart() {
      await start();
    },
  };
}
