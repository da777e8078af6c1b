import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '@svc/engines';

export { freePort };

export const SVC_BIN = fileURLToPath(new URL('../bin/svc.js', import.meta.url));

export interface ChildServer {
  process: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the exit code or signal once the process has ended. */
  exited: Promise<number | string | null>;
}

export interface ChildOptions {
  /** Soft RLIMIT_FSIZE of the child in KiB (`ulimit -S -f`): writes past it fail with EFBIG, as on a full disk. */
  fileSizeLimitKiB?: number;
  /** Run the child as this user and group (only root may): file permissions then apply to it. */
  user?: { uid: number; gid: number };
  /** Told of everything the child prints, as it prints it (before it listens too). */
  onOutput?(text: string): void;
}

/** Starts `svc <args>` as a child process with the test defaults. */
export async function spawnSvc(args: string[], env: Record<string, string>, options: ChildOptions = {}): Promise<ChildProcess> {
  const port = env.PORT ?? String(await freePort());
  const command = options.fileSizeLimitKiB === undefined
    ? [process.execPath, SVC_BIN, ...args]
    // exec keeps the pid: the limit can later be lifted with `prlimit --pid`.
    : ['bash', '-c', `ulimit -S -f ${options.fileSizeLimitKiB} && exec "$@"`, 'bash', process.execPath, SVC_BIN, ...args];
  return spawn(command[0]!, command.slice(1), {
    env: { ...process.env, HOST: '127.0.0.1', PORT: port, SVC_LOG_LEVEL: 'warn', SVC_RATE_LIMIT_PER_KEY: '0', SVC_RATE_LIMIT_PER_IP: '0', SVC_SAMPLE_DATA: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...options.user,
  });
}

/** Runs `svc serve` in a child process and waits until it listens. */
export async function startChildServer(env: Record<string, string>, timeoutMs = 20_000, options: ChildOptions = {}): Promise<ChildServer> {
  const port = await freePort();
  const child = await spawnSvc(['serve'], { ...env, PORT: String(port) }, options);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  if (options.onOutput) for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk) => options.onOutput!(String(chunk)));
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const check = () => {
      if (output.includes('Svc listening on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${how}) before listening:\n${output}`));
    });
  });
  return { process: child, url: `http://127.0.0.1:${port}`, output: () => output, exited };
}

/** Runs `svc <args>` to its end: exit code (or signal) and everything it printed. */
export async function runSvc(args: string[], env: Record<string, string>, options: ChildOptions = {}): Promise<{ exit: number | string | null; output: string }> {
  const child = await spawnSvc(args, env, options);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  // 'close', not 'exit': the output is complete only once the pipes are closed.
  const exit = await new Promise<number | string | null>((resolve) => child.once('close', (code, signal) => resolve(signal ?? code)));
  return { exit, output };
}

/** Resolves once `check` answers true; fails saying `what` did not happen within `withinMs`. */
export async function until(what: string, check: () => Promise<boolean>, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
