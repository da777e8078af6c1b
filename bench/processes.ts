import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';

/** Every child still running; killed on exit whatever happens. */
const running = new Set<ChildProcess>();
/** Temporary folders not yet removed; removed on exit whatever happens. */
const folders = new Set<string>();

process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A new temporary folder, removed by `remove()` or at the latest when the process exits. */
export function tempFolder(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  folders.add(path);
  return {
    path,
    remove() {
      rmSync(path, { recursive: true, force: true });
      folders.delete(path);
    },
  };
}

export interface Child {
  /** http://127.0.0.1:<port> */
  url: string;
  pid: number;
  /** Set once the process has exited. */
  exitCode(): number | null | 'running';
  /** Output it wrote, for error messages. */
  output(): string;
  /** SIGTERM, wait for a clean exit (the service commits and checkpoints), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Matches the "listening on http://127.0.0.1:PORT" line; group 1 is the URL. */
  readyLine: RegExp;
  /** Path polled after the line appeared until it answers 200 (e.g. /readyz). */
  readyPath?: string;
  timeoutMs?: number;
}

/** Starts a server child process and resolves once it listens (and answers `readyPath`). */
export async function startServer(options: StartOptions): Promise<Child> {
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  let exit: number | null | 'running' = 'running';
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = code ?? (signal ? -1 : null);
      running.delete(child);
      resolve();
    });
  });
  const handle: Child = {
    url: '',
    pid: child.pid ?? -1,
    exitCode: () => exit,
    output: () => output,
    async stop(graceMs = 20_000) {
      if (exit !== 'running') return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };

  try {
    handle.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${options.name} did not start within ${options.timeoutMs ?? 60_000} ms`)), options.timeoutMs ?? 60_000);
      const onData = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-20_000);
        const match = options.readyLine.exec(output);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`${options.name} exited (code ${String(exit)}) before it was ready:\n${output}`));
      });
    });
    const url = new URL(handle.url);
    if (url.hostname !== '127.0.0.1') throw new Error(`${options.name} listens on ${handle.url}; the benchmark only talks to 127.0.0.1`);
    if (options.readyPath) await waitReady(handle.url + options.readyPath, options.timeoutMs ?? 60_000);
  } catch (error) {
    await handle.stop(2_000);
    throw error;
  }
  return handle;
}

async function waitReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await request(url);
      await response.body.dump();
      if (response.statusCode === 200) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts a helper process that is not a server (e.g. a load client talking over IPC); like the
 * servers, it is killed when the benchmark exits, whatever the way out.
 */
export function spawnTracked(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, options);
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Kills every child at once (signal handlers call this before exiting). */
export function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds a process (or one thread of it) has used so far, from /proc; NaN where /proc is missing. */
export function cpuSeconds(pid: number, tid?: number): number {
  try {
    const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** The repository root, where the service's children run. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The line a server prints once it listens; group 1 is its URL. */
export const READY_LINE = /listening on (http:\/\/127\.0\.0\.1:\d+)/;

/**
 * Starts `svc serve` on 127.0.0.1 as the benchmarks run it: data in `dataDir`, rate limits off,
 * log level `warn`, and no sample activity loaded into a fresh tenant in the background while
 * they measure. `env` adds to that (bootstrap credentials, …).
 */
export function startService(dataDir: string, env: Record<string, string> = {}, timeoutMs?: number): Promise<Child> {
  return startServer({
    name: 'svc',
    command: process.execPath,
    args: ['apps/server/bin/svc.js', 'serve'],
    cwd: ROOT,
    env: {
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_LOG_LEVEL: 'warn',
      SVC_RATE_LIMIT_PER_KEY: '0',
      SVC_RATE_LIMIT_PER_IP: '0',
      SVC_SAMPLE_DATA: 'false',
      ...env,
    },
    readyLine: READY_LINE,
    readyPath: '/readyz',
    timeoutMs,
  });
}
