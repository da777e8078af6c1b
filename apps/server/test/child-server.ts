import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const SVC_BIN = fileURLToPath(new URL('../bin/svc.js', import.meta.url));

export interface ChildServer {
  process: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the exit code or signal once the process has ended. */
  exited: Promise<number | string | null>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Runs `svc serve` in a child process and waits until it listens. */
export async function startChildServer(env: Record<string, string>, timeoutMs = 20_000): Promise<ChildServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [SVC_BIN, 'serve'], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), SVC_LOG_LEVEL: 'warn', SVC_RATE_LIMIT_PER_KEY: '0', SVC_RATE_LIMIT_PER_IP: '0', SVC_SAMPLE_DATA: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
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
