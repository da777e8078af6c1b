import { join } from 'node:path';
import { DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { DATABASE_FILE_NAME } from '@svc/storage';

/**
 * Reads the database of a stopped server read-only: the WAL is replayed in memory and nothing
 * is written back, so the server's next start still recovers from the state the kill left.
 */
export async function readStoppedDatabase<T>(dataDir: string, sql: string, values?: DuckDBValue[]): Promise<T[]> {
  const instance = await DuckDBInstance.create(join(dataDir, DATABASE_FILE_NAME), { access_mode: 'READ_ONLY' });
  try {
    const connection = await instance.connect();
    const rows = (await connection.runAndReadAll(sql, values)).getRowObjectsJS() as T[];
    connection.closeSync();
    return rows;
  } finally {
    instance.closeSync();
  }
}
