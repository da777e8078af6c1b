import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { POSTGRES_BIN_DIR } from './engine-binaries';
import type { EngineOptions } from './engine-options';
import { freePort } from './free-port';

const run = promisify(execFile);

/** PostgreSQL refuses to run as root: as root, its programs run as this OS user. */
const POSTGRES_OS_USER = 'postgres';
/** Superuser of every throwaway server (initdb `-U`), whoever runs the tests. */
const SUPERUSER = 'postgres';
/** How long `restart()` keeps trying while the killed server's processes still hold its shared memory. */
const RESTART_WAIT_MS = 10_000;

export interface PostgresServer {
  /** URL of the server's `postgres` database. */
  url: string;
  port: number;
  /** Creates an empty database and returns its URL: one per test keeps tests apart on one server. */
  createDatabase(): Promise<string>;
  /** Stops the server (fast shutdown) and removes its folder unless it was given (`dir`). */
  stop(): Promise<void>;
  /** SIGKILLs the postmaster and its children at once, as a crash of the host would. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and folder (after `kill`). */
  restart(): Promise<void>;
  /** The postmaster's pid and those of its children (while it runs). */
  pids(): number[];
}

const asRoot = process.getuid?.() === 0;

/** Runs one of PostgreSQL's programs, as the `postgres` OS user when we are root. */
function pg(program: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const path = join(POSTGRES_BIN_DIR, program);
  return asRoot ? run('runuser', ['-u', POSTGRES_OS_USER, '--', path, ...args]) : run(path, args);
}

async function giveToPostgres(path: string): Promise<void> {
  if (asRoot) await run('chown', ['-R', `${POSTGRES_OS_USER}:`, path]);
}

/**
 * An initialised data folder, made once per PostgreSQL version and machine and copied for each
 * server (initdb takes 1–2 s, a copy a fraction of that). Made in a folder of its own and
 * renamed into place, so parallel test workers never see or use a half-made template.
 */
async function templateDir(): Promise<string> {
  const { stdout } = await run(join(POSTGRES_BIN_DIR, 'postgres'), ['--version']);
  const version = /(\d+(?:\.\d+)*)/.exec(stdout)?.[1] ?? 'unknown';
  // Kept across test runs (test-tmpdir-setup.ts gives each run a temporary folder of its own).
  const template = join(process.env.SVC_TEST_SHARED_TMPDIR ?? tmpdir(), `svc-pg-template-${version}`);
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  const building = mkdtempSync(`${template}.building-`);
  try {
    await giveToPostgres(building);
    const data = join(building, 'data');
    await pg('initdb', ['-D', data, '-U', SUPERUSER, '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
    try {
      renameSync(data, template);
    } catch (error) {
      // Another worker renamed its template first: use that one.
      if (!existsSync(join(template, 'PG_VERSION'))) throw error;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return template;
}

/** Whether the process lives (a zombie nobody has reaped yet does not). */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The postmaster's pid (first line of postmaster.pid) and those of its children. */
function clusterPids(data: string): number[] {
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // Field 4 of /proc/PID/stat is the parent pid; the command name (field 2) may hold spaces.
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

/**
 * Creates the empty database `name` on the server of `serverUrl` (a URL of any of its databases)
 * and returns the new database's URL.
 */
export async function createDatabaseOn(serverUrl: string, name: string): Promise<string> {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => undefined });
  try {
    await admin`CREATE DATABASE ${admin(name)}`;
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Starts a PostgreSQL server on a free 127.0.0.1 port: in a new data folder copied from the
 * template, or on the one already in `options.dir`. (pg_ctl always starts the server in a
 * session of its own: a Ctrl-C at the terminal does not reach it.)
 */
export async function startPostgres(options: Pick<EngineOptions, 'dir'> = {}): Promise<PostgresServer> {
  const home = options.dir ?? mkdtempSync(join(tmpdir(), 'svc-pg-'));
  if (options.dir) mkdirSync(options.dir, { recursive: true });
  const data = join(home, 'data');
  if (!existsSync(join(data, 'PG_VERSION'))) await run('cp', ['-a', await templateDir(), data]);
  await giveToPostgres(home);
  // Its own folder is its own now; the folders above must let it through.
  if (asRoot) {
    try {
      await run('runuser', ['-u', POSTGRES_OS_USER, '--', 'test', '-x', home]);
    } catch {
      throw new Error(`PostgreSQL runs as the OS user "${POSTGRES_OS_USER}", which cannot reach ${home}: choose a folder it can reach, or let it through the folders above (chmod o+x).`);
    }
  }
  const removeHome = () => {
    if (!options.dir) rmSync(home, { recursive: true, force: true });
  };
  let port = 0;
  const start = () =>
    pg('pg_ctl', [
      '-D', data, '-l', join(home, 'server.log'), '-w', '-o',
      `-p ${port} -c listen_addresses=127.0.0.1 -k ${data} -c fsync=off`,
      'start',
    ]);
  // Another process may take the free port before the server binds it: try another.
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (error) {
      if (attempt === 3) {
        removeHome();
        throw error;
      }
    }
  }
  const url = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
  let databases = 0;
  return {
    url,
    port,
    createDatabase: () => createDatabaseOn(url, `svc_test_${++databases}`),
    async stop() {
      try {
        // A killed server left its postmaster.pid behind: nothing to stop then.
        if (existsSync(join(data, 'postmaster.pid')) && clusterPids(data).some(isRunning)) {
          await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
        }
      } finally {
        removeHome();
      }
    },
    async kill() {
      const pids = clusterPids(data);
      for (const pid of pids) {
        // A backend may end by itself between the listing and the kill.
        try {
          process.kill(pid, 'SIGKILL');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
        }
      }
      while (pids.some(isRunning)) await new Promise((resolve) => setTimeout(resolve, 20));
    },
    pids: () => (existsSync(join(data, 'postmaster.pid')) ? clusterPids(data).filter(isRunning) : []),
    async restart() {
      const deadline = Date.now() + RESTART_WAIT_MS;
      for (;;) {
        try {
          await start();
          return;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    },
  };
}
