import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLICKHOUSE_SERVER_BIN } from './engine-binaries';
import type { EngineOptions } from './engine-options';
import { freePort } from './free-port';

/** How long a started server has to answer `/ping`. */
const READY_WAIT_MS = 20_000;

export interface ClickHouseServer {
  /** HTTP URL of the server (`http://127.0.0.1:PORT`). */
  url: string;
  httpPort: number;
  /** Creates an empty database and returns its name: one per test keeps tests apart on one server. */
  createDatabase(): Promise<string>;
  /** Stops the server and removes its folder unless it was given (`dir`). */
  stop(): Promise<void>;
  /** SIGKILLs the server, as a crash of the host would (its folder stays for `restart`). */
  kill(): Promise<void>;
  /** Starts the server again on the same ports and folder. */
  restart(): Promise<void>;
  /** The server's pid while it runs. */
  pid(): number | undefined;
}

function configXml(home: string, httpPort: number, tcpPort: number): string {
  return `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${home}/log/server.log</log><errorlog>${home}/log/error.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>${httpPort}</http_port>
  <tcp_port>${tcpPort}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${home}/data/</path>
  <tmp_path>${home}/tmp/</tmp_path>
  <user_files_path>${home}/user_files/</user_files_path>
  <format_schema_path>${home}/format_schemas/</format_schema_path>
  <users_config>${home}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mlock_executable>false</mlock_executable>
  <mark_cache_size>268435456</mark_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
`;
}

const USERS_XML = `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`;

async function ping(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/ping`, { signal: AbortSignal.timeout(1_000) });
    return response.ok;
  } catch {
    return false;
  }
}

async function query(url: string, sql: string): Promise<string> {
  const response = await fetch(url, { method: 'POST', body: sql });
  const text = await response.text();
  if (!response.ok) throw new Error(`ClickHouse refused ${sql}: ${text}`);
  return text;
}

/** Starts a ClickHouse server on free 127.0.0.1 ports, in a folder of its own (a temporary one by default). */
export async function startClickHouse(options: EngineOptions = {}): Promise<ClickHouseServer> {
  const home = options.dir ?? mkdtempSync(join(tmpdir(), 'svc-ch-'));
  for (const dir of ['data', 'tmp', 'user_files', 'format_schemas', 'log']) mkdirSync(join(home, dir), { recursive: true });
  const removeHome = () => {
    if (!options.dir) rmSync(home, { recursive: true, force: true });
  };
  writeFileSync(join(home, 'users.xml'), USERS_XML);
  let httpPort = 0;
  let child: ChildProcess | null = null;
  let url = '';

  const start = async (): Promise<void> => {
    writeFileSync(join(home, 'config.xml'), configXml(home, httpPort, tcpPort));
    const started = spawn(CLICKHOUSE_SERVER_BIN, [`--config-file=${join(home, 'config.xml')}`], { stdio: 'ignore', detached: options.ownProcessGroup ?? false });
    child = started;
    let exited = false;
    started.once('exit', () => (exited = true));
    const deadline = Date.now() + READY_WAIT_MS;
    while (!(await ping(url))) {
      if (exited) throw new Error(`clickhouse-server exited at start (see ${home}/log/error.log)`);
      if (Date.now() > deadline) {
        started.kill('SIGKILL');
        throw new Error(`clickhouse-server did not answer /ping within ${READY_WAIT_MS} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
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

  let tcpPort = 0;
  // Another process may take a free port before the server binds it: try others.
  for (let attempt = 1; ; attempt++) {
    httpPort = await freePort();
    tcpPort = await freePort();
    url = `http://127.0.0.1:${httpPort}`;
    try {
      await start();
      break;
    } catch (error) {
      await killChild();
      if (attempt === 3) {
        removeHome();
        throw error;
      }
    }
  }
  let databases = 0;
  return {
    url,
    httpPort,
    async createDatabase() {
      const name = `svc_test_${++databases}`;
      await query(url, `CREATE DATABASE ${name}`);
      return name;
    },
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
      removeHome();
    },
    kill: killChild,
    pid: () => (child as ChildProcess | null)?.pid,
    async restart() {
      await start();
    },
  };
}
