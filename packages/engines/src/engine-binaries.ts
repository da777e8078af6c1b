import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where each engine's program is: Debian's locations, each overridable by an environment
 * variable (for another layout, or to try what happens when one is missing).
 */
export const POSTGRES_BIN_DIR = process.env.SVC_POSTGRES_BIN_DIR || '/usr/lib/postgresql/15/bin';
export const CLICKHOUSE_SERVER_BIN = process.env.SVC_CLICKHOUSE_SERVER_BIN || '/usr/sbin/clickhouse-server';
export const NATS_SERVER_BIN = process.env.SVC_NATS_SERVER_BIN || '/usr/sbin/nats-server';
export const HAPROXY_BIN = process.env.SVC_HAPROXY_BIN || '/usr/sbin/haproxy';

export interface Engine {
  name: string;
  /** The program that must exist. */
  path: string;
  /** The Debian packages that bring it. */
  debianPackages: string[];
}

export const ENGINES = {
  postgres: { name: 'PostgreSQL 15', path: join(POSTGRES_BIN_DIR, 'postgres'), debianPackages: ['postgresql-15'] },
  nats: { name: 'NATS server', path: NATS_SERVER_BIN, debianPackages: ['nats-server'] },
  clickhouse: { name: 'ClickHouse server', path: CLICKHOUSE_SERVER_BIN, debianPackages: ['clickhouse-server', 'clickhouse-client'] },
  haproxy: { name: 'HAProxy', path: HAPROXY_BIN, debianPackages: ['haproxy'] },
} satisfies Record<string, Engine>;

/** Those of `engines` whose program is missing. */
export function missingEngines(engines: Engine[]): Engine[] {
  return engines.filter((engine) => !existsSync(engine.path));
}

/** The one command that installs every engine of `missing`. */
export function aptGetLine(missing: Engine[]): string {
  return `apt-get install -y ${missing.flatMap((engine) => engine.debianPackages).join(' ')}`;
}
