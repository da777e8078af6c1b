import type { MetaStore } from './meta-store';
import type { SessionStore } from './session-store';
import { PgDatabase, type PgDatabaseOptions } from './postgres/pg-database';
import { PgMetaStore } from './postgres/pg-meta-store';
import { PgSessionStore } from './postgres/pg-session-store';

/** What the CLI's operator commands (tenants, keys, tokens) work with. */
export interface OperatorStorage {
  meta: MetaStore;
  sessions: SessionStore;
  close(): Promise<void>;
}

/**
 * The metadata of a cluster, straight from its PostgreSQL database: the operator commands run
 * while nodes are up (no node's DuckDB file is opened, so nothing is locked).
 */
export async function openOperatorStorage(postgresUrl: string, options: PgDatabaseOptions = {}): Promise<OperatorStorage> {
  const pg = await PgDatabase.open(postgresUrl, { poolSize: 2, ...options });
  return { meta: new PgMetaStore(pg), sessions: new PgSessionStore(pg), close: () => pg.close() };
}
