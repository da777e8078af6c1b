import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { ChDatabaseOptions } from '../src/clickhouse/ch-database';

/**
 * The current ClickHouse engine in process, from npm `chdb` (≈ 540 MB, so not a dependency):
 * `.ci/run` installs it with `npm install --no-save --prefix .chdb chdb@…` into the folder
 * `.chdb/` of the repository (or the folder SVC_CHDB_PREFIX names), outside node_modules, so
 * that `npm ci` leaves it alone.
 */
const PREFIX = process.env.SVC_CHDB_PREFIX ?? resolve(import.meta.dirname, '../../../.chdb');
const PACKAGE = join(PREFIX, 'node_modules', 'chdb');

/** Whether the dialect check can run: in CI a missing chdb fails; locally it skips with a message. */
export function chdbAvailable(): boolean {
  if (existsSync(join(PACKAGE, 'package.json'))) return true;
  const missing = `npm chdb is not installed in ${PREFIX}`;
  if (process.env.CI) throw new Error(`${missing}: .ci/run must install it (npm install --no-save --prefix .chdb chdb@3.4.0).`);
  console.warn(`Skipping the ClickHouse dialect check: ${missing} (npm install --no-save --prefix .chdb chdb@3.4.0).`);
  return false;
}

interface ChdbConnectionModule {
  createChdbConnection(options: { path?: string }): NonNullable<ChDatabaseOptions['connection']>;
}

/**
 * A connection to a fresh in-process engine. `:memory:` connections of one process share one
 * engine, emptied when the last of them closes: close each before opening the next.
 */
export function chdbConnection(): NonNullable<ChDatabaseOptions['connection']> {
  const require = createRequire(join(PREFIX, 'node_modules', 'index.js'));
  const chdb = require('chdb/connection') as ChdbConnectionModule;
  return chdb.createChdbConnection({ path: ':memory:' });
}
