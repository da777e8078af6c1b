import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NATS_SERVER_BIN } from './engine-binaries';
import type { EngineOptions } from './engine-options';
import { freePort } from './free-port';

/** How long a started server has to report JetStream healthy. */
const READY_WAIT_MS = 15_000;
/** How long every thread of a server sent SIGSTOP has to be stopped. */
const FREEZE_WAIT_MS = 5_000;

export interface NatsServer {
  /** Client URL (`nats://127.0.0.1:PORT`). */
  url: string;
  port: number;
  /** Monitoring endpoint (`http://127.0.0.1:PORT`: `/connz`, `/jsz`, …). */
  monitorUrl: string;
  /** Stops the server and removes its folder unless it was given (`dir`). */
  stop(): Promise<void>;
  /** SIGKILLs the server, as a crash of the host would (its JetStream folder stays for `restart`). */
  kill(): Promise<void>;
  /** Starts the server again on the same ports and folder. */
  restart(): Promise<void>;
  /**
   * Freezes the server (SIGSTOP), as a host that hangs or is cut off: its sockets stay open,
   * nothing answers. Resolves once every thread of the server is stopped: a signal takes effect
   * only when the kernel next runs the process, and under load a server answers for tens of
   * milliseconds after `kill` returned.
   */
  freeze(): Promise<void>;
  /** Lets a frozen server run again (SIGCONT). */
  thaw(): void;
  /** The server's pid while it runs. */
  pid(): number | undefined;
}

async function jetStreamHealthy(monitorPort: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`, { signal: AbortSignal.timeout(1_000) });
    return response.ok;
  } catch {
    return false;
  }
}

/** Whether a clustered server sees all its routes and a JetStream meta leader (streams can be created). */
async function clusterReady(monitorPort: number, routes: number): Promise<boolean> {
  try {
    const [routez, jsz] = await Promise.all(
      ['routez', 'jsz'].map(async (page) => {
        const response = await fetch(`http://127.0.0.1:${monitorPort}/${page}`, { signal: AbortSignal.timeout(1_000) });
        return (await response.json()) as { num_routes?: number; meta_cluster?: { leader?: string } };
      }),
    );
    return routez!.num_routes === routes && Boolean(jsz!.meta_cluster?.leader);
  } catch {
    return false;
  }
}

/** Whether every thread of process `pid` is stopped by a signal (state `T` in `/proc/PID/task/TID/stat`). */
function allThreadsStopped(pid: number): boolean {
  const tasks = `/proc/${pid}/task`;
  if (!existsSync(tasks)) throw new Error(`${tasks} is missing: freezing a NATS server needs Linux /proc`);
  try {
    return readdirSync(tasks).every((tid) => {
      const stat = readFileSync(`${tasks}/${tid}/stat`, 'utf8');
      // The state follows the command name, which is in parentheses and may hold blanks.
      return stat.charAt(stat.lastIndexOf(')') + 2) === 'T';
    });
  } catch {
    // A thread that ended between the listing and the read: look again.
    return false;
  }
}

/** One nats-server process in a folder of its own, which outlives `kill` so that `start` brings the same server back. */
class NatsProcess {
  readonly home: string;
  port = 0;
  monitorPort = 0;
  private child: ChildProcess | null = null;

  /** In `options.dir` (kept by `stop`) when given, else in a temporary folder. */
  constructor(private readonly options: EngineOptions = {}) {
    this.home = options.dir ?? mkdtempSync(join(tmpdir(), 'svc-nats-'));
    mkdirSync(join(this.home, 'jetstream'), { recursive: true });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Writes `config` (with `listen`, `http` and `jetstream` prepended), starts the server and waits until JetStream is enabled. */
  async start(config: string[] = []): Promise<void> {
    writeFileSync(
      join(this.home, 'nats.conf'),
      [
        `listen: 127.0.0.1:${this.port}`,
        `http: 127.0.0.1:${this.monitorPort}`,
        `jetstream { store_dir: "${join(this.home, 'jetstream')}", max_memory_store: 256MB, max_file_store: 4GB }`,
        ...config,
        '',
      ].join('\n'),
    );
    const started = spawn(NATS_SERVER_BIN, ['-c', join(this.home, 'nats.conf')], { stdio: 'ignore', detached: this.options.ownProcessGroup ?? false });
    this.child = started;
    let exited = false;
    started.once('exit', () => (exited = true));
    const deadline = Date.now() + READY_WAIT_MS;
    while (!(await jetStreamHealthy(this.monitorPort))) {
      if (exited) throw new Error('nats-server exited at start');
      if (Date.now() > deadline) {
        started.kill('SIGKILL');
        throw new Error(`nats-server did not report JetStream healthy within ${READY_WAIT_MS} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Sends `signal` to the running server, if any. */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** Sends SIGSTOP and waits until the kernel shows every thread of the server stopped (Linux `/proc`). */
  async freeze(): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error('No nats-server runs to freeze.');
    this.signal('SIGSTOP');
    const deadline = Date.now() + FREEZE_WAIT_MS;
    while (!allThreadsStopped(pid)) {
      if (Date.now() > deadline) throw new Error(`nats-server (pid ${pid}) was not stopped within ${FREEZE_WAIT_MS} ms of SIGSTOP`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  async kill(): Promise<void> {
    const running = this.child;
    this.child = null;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  }

  /** Stops the server (SIGTERM, SIGKILL after 5 s) and removes its folder unless it was given. */
  async stop(): Promise<void> {
    const running = this.child;
    this.child = null;
    if (running && running.exitCode === null && running.signalCode === null) {
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      // A frozen server takes the signal once it runs again.
      running.kill('SIGCONT');
      const timer = setTimeout(() => running.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    if (!this.options.dir) rmSync(this.home, { recursive: true, force: true });
  }
}

/** Starts a throwaway single NATS server with JetStream on free 127.0.0.1 ports, in a folder of its own. */
export async function startNats(): Promise<NatsServer> {
  const server = new NatsProcess();
  // Another process may take a free port before the server binds it: try others.
  for (let attempt = 1; ; attempt++) {
    server.port = await freePort();
    server.monitorPort = await freePort();
    try {
      await server.start();
      break;
    } catch (error) {
      await server.kill();
      if (attempt === 3) {
        await server.stop();
        throw error;
      }
    }
  }
  return {
    url: `nats://127.0.0.1:${server.port}`,
    port: server.port,
    monitorUrl: `http://127.0.0.1:${server.monitorPort}`,
    stop: () => server.stop(),
    kill: () => server.kill(),
    restart: () => server.start(),
    freeze: () => server.freeze(),
    thaw: () => server.signal('SIGCONT'),
    pid: () => server.pid,
  };
}

/** A NATS cluster of servers routed to each other, JetStream on each (streams may have up to `nodes.length` replicas). */
export interface NatsCluster {
  /** The servers, each killable and restartable on its own (`stop` of one stops only it). */
  nodes: NatsServer[];
  /** All client URLs as a comma list, in the order of `nodes` (what `SVC_NATS_URL` takes). */
  urls: string;
  /** Stops every server and removes their folders. */
  stop(): Promise<void>;
}

/**
 * Starts a NATS cluster of `size` servers on free 127.0.0.1 ports (cluster `svc-test`, full mesh
 * of routes, JetStream on each) and waits until every server sees the others and a JetStream
 * meta leader. A restarted server rejoins with its JetStream folder and catches up. With
 * `options.dir`, server n1 keeps its folder in `dir/n1`, and so on.
 */
export async function startNatsCluster(size: number, options: EngineOptions = {}): Promise<NatsCluster> {
  for (let attempt = 1; ; attempt++) {
    const servers = Array.from({ length: size }, (_, i) => new NatsProcess({ ...options, dir: options.dir && join(options.dir, `n${i + 1}`) }));
    const clusterPorts: number[] = [];
    for (const server of servers) {
      server.port = await freePort();
      server.monitorPort = await freePort();
      clusterPorts.push(await freePort());
    }
    const configOf = (i: number): string[] => [
      `server_name: n${i + 1}`,
      'cluster {',
      '  name: svc-test',
      `  listen: 127.0.0.1:${clusterPorts[i]}`,
      `  routes: [${clusterPorts.filter((_, j) => j !== i).map((port) => `nats-route://127.0.0.1:${port}`).join(', ')}]`,
      '}',
    ];
    const startOne = async (i: number): Promise<void> => {
      await servers[i]!.start(configOf(i));
      const deadline = Date.now() + READY_WAIT_MS;
      while (!(await clusterReady(servers[i]!.monitorPort, size - 1))) {
        if (Date.now() > deadline) throw new Error(`NATS server n${i + 1} did not see its ${size - 1} routes and a JetStream meta leader within ${READY_WAIT_MS} ms`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    };
    try {
      await Promise.all(servers.map((_, i) => startOne(i)));
    } catch (error) {
      await Promise.all(servers.map((server) => server.stop()));
      if (attempt === 3) throw error;
      continue;
    }
    const nodes = servers.map((server, i): NatsServer => ({
      url: `nats://127.0.0.1:${server.port}`,
      port: server.port,
      monitorUrl: `http://127.0.0.1:${server.monitorPort}`,
      stop: () => server.stop(),
      kill: () => server.kill(),
      restart: () => startOne(i),
      freeze: () => server.freeze(),
      thaw: () => server.signal('SIGCONT'),
      pid: () => server.pid,
    }));
    return {
      nodes,
      urls: nodes.map((node) => node.url).join(','),
      async stop() {
        await Promise.all(servers.map((server) => server.stop()));
      },
    };
  }
}
