import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { POSTGRES_BIN_DIR } from '@svc/engines';

export { createDatabaseOn, POSTGRES_BIN_DIR, startPostgres, type PostgresServer } from '@svc/engines';

/**
 * Whether PostgreSQL tests can run. In CI a missing PostgreSQL is a failure, never a skip;
 * locally the tests skip with a clear message.
 */
export function postgresAvailable(): boolean {
  if (existsSync(join(POSTGRES_BIN_DIR, 'postgres'))) return true;
  const missing = `${POSTGRES_BIN_DIR}/postgres is missing`;
  if (process.env.CI) throw new Error(`${missing}: .ci/run must install Debian's postgresql-15 package.`);
  console.warn(`Skipping PostgreSQL tests: ${missing} (apt-get install postgresql-15).`);
  return false;
}
