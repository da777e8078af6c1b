import { existsSync } from 'node:fs';
import { CLICKHOUSE_SERVER_BIN } from '@svc/engines';

export { CLICKHOUSE_SERVER_BIN, startClickHouse, type ClickHouseServer } from '@svc/engines';

/**
 * Whether ClickHouse tests can run. In CI a missing server is a failure, never a skip;
 * locally the tests skip with a clear message.
 */
export function clickhouseAvailable(): boolean {
  if (existsSync(CLICKHOUSE_SERVER_BIN)) return true;
  const missing = `${CLICKHOUSE_SERVER_BIN} is missing`;
  if (process.env.CI) throw new Error(`${missing}: .ci/run must install Debian's clickhouse-server package.`);
  console.warn(`Skipping ClickHouse tests: ${missing} (apt-get install clickhouse-server clickhouse-client).`);
  return false;
}
