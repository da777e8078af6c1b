import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
/** How long a node has to say it listens (it waits for its engines up to a minute). */
const LISTEN_WAIT_MS = 90_000;
/** How long a node has to drain and exit after SIGTERM before it is killed. */
const DRAIN_WAIT_MS = 30_000;

/** A `svc serve` child process: one node of a cluster run on this machine. */
export interface SvcNodeProcess {
  name: string;
  /** `http://127.0.0.1:PORT` */
  url: string;
  port: number;
  pid: number | undefined;
  /** Everything the node printed so far (also written to its log file). */
  output(): string;
  /** Resolves with the exit code or signal once the process has ended. */
  exited: Promise<number | string | null>;
  /** Resolves once the node printed a line holding `text`; rejects if it exits first or `withinMs` passes. */
  printed(text: string, withinMs: number): Promise<void>;
  /** SIGTERM: the node stops taking work, drains its sockets and writes what it holds, then exits (SIGKILL after 30 s). */
  stop(): Promise<void>;
}

/**
 * Starts `svc serve` on 127.0.0.1:`port` with `env` added to this process's environment, its
 * output written to `logFile`, in a process group of its own (a Ctrl-C at the terminal reaches
 * only the program that stops the nodes in order), and waits until it listens.
 */
export async function startSvcNode(name: string, port: number, env: Record<string, string>, logFile: string): Promise<SvcNodeProcess> {
  mkdirSync(dirname(logFile), { recursive: true });
  const log = createWriteStream(logFile, { flags: 'a' });
  const child: ChildProcess = spawn(process.execPath, [SVC_BIN, 'serve'], {
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const listeners = new Set<() => void>();
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.on('data', (chunk) => {
      output += chunk;
      log.write(chunk);
      for (const listener of listeners) listener();
    });
  }
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('close', (code, signal) => {
      log.end();
      resolve(signal ?? code);
    }),
  );
  let ended = false;
  void exited.then(() => (ended = true));

  const printed = (text: string, withinMs: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!output.includes(text)) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${name} did not print "${text}" within ${withinMs} ms (log: ${logFile})`));
      }, withinMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      void exited.then((how) => {
        done();
        reject(new Error(`${name} exited (${how}) before printing "${text}" (log: ${logFile}):\n${output.slice(-2_000)}`));
      });
      check();
    });

  await printed('Svc listening on', LISTEN_WAIT_MS);
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid,
    output: () => output,
    exited,
    printed,
    async stop() {
      if (ended) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), DRAIN_WAIT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
