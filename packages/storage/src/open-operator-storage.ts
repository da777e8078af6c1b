import type { MetadataChangeFeed } from './metadata-change-feed';
import type { MetaStore } from './meta-store';
import type { SessionStore } from './session-store';
import { PgChangeFeed } from './postgres/pg-change-feed';
import { PgDatabase, type PgDatabaseOptions } from './postgres/pg-database';
import { PgMetaStore } from './postgres/pg-meta-store';
import { PgSessionStore } from './postgres/pg-session-store';

/** What the CLI's operator commands (tenants, keys, tokens) work with. */
export interface OperatorStorage {
  meta: MetaStore;
  sessions: SessionStore;
  /** Where the commands tell running nodes what they changed (a revoked key, new settings). */
  changes?: MetadataChangeFeed;
  close(): Promise<void>;
}

/**
 * The metadata of a cluster, straight from its PostgreSQL database: the operator commands run
 * while nodes are up (no node's DuckDB file is opened, so nothing is locked).
 */
export async function openOperatorStorage(postgresUrl: string, options: PgDatabaseOptions = {}): Promise<OperatorStorage> {
  const pg = await PgDatabase.open(postgresUrl, { poolSize: 2, ...options });
  const changes = await PgChangeFeed.start(pg);
  return {
    meta: new PgMetaStore(pg),
    sessions: new PgSessionStore(pg),
    changes,
    close: async () => {
      await changes.close();
      await pg.close();
    },
  };
}
