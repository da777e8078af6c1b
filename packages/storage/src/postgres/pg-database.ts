import postgres from 'postgres';
import { SvcError } from '@svc/protocol';
import { PG_MIGRATIONS, type PgMigration } from './pg-migrations';
import { pgFailure } from './pg-failure';

/**
 * Connections one node keeps to PostgreSQL. Metadata queries are short (a key lookup, a
 * settings read), so a few connections serve a node; several nodes share the server's
 * `max_connections` (100 by default), which bounds nodes × pool size.
 */
export const DEFAULT_POOL_SIZE = 10;
/** How long opening one connection may take before the query fails with `storage_unavailable`. */
export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 5;
/** How long `close` waits for queries under way before it cuts their connections. */
const CLOSE_TIMEOUT_SECONDS = 5;
/**
 * Key of the transaction-scoped advisory lock that migrations run under: nodes starting at
 * once apply them one after the other, and each sees what the one before it applied.
 * Any constant works as long as nothing else in the database uses it.
 */
export const MIGRATION_LOCK_KEY = 7_411_640_317;

export interface PgDatabaseOptions {
  /** Connections in the pool; default `DEFAULT_POOL_SIZE`. */
  poolSize?: number;
  /** Seconds to open one connection; default `DEFAULT_CONNECT_TIMEOUT_SECONDS`. */
  connectTimeoutSeconds?: number;
}

export type PgSql = postgres.Sql;
export type PgTransaction = postgres.TransactionSql;

/**
 * The PostgreSQL metadata database: a pool of connections from a URL. A connection that
 * breaks (server restarted, network gone) is replaced on the next query, so the database
 * recovers by itself once the server is back; until then queries fail with
 * `storage_unavailable`.
 */
export class PgDatabase {
  private closed = false;

  private constructor(private readonly sql: PgSql) {}

  /**
   * Opens a pool on `url` and applies the pending migrations. An unreachable server fails
   * with `storage_unavailable`.
   */
  static async open(url: string, options: PgDatabaseOptions = {}): Promise<PgDatabase> {
    const sql = postgres(url, {
      max: options.poolSize ?? DEFAULT_POOL_SIZE,
      connect_timeout: options.connectTimeoutSeconds ?? DEFAULT_CONNECT_TIMEOUT_SECONDS,
      // Notices ("relation already exists, skipping") are not errors; do not print them.
      onnotice: () => undefined,
    });
    const db = new PgDatabase(sql);
    try {
      await db.migrate(PG_MIGRATIONS);
    } catch (error) {
      await sql.end({ timeout: 0 });
      const failure = pgFailure(error);
      if (!(failure instanceof SvcError)) throw failure;
      // At start-up the operator reads this: name the server (never the password) and the reason.
      const reason = error instanceof Error ? error.message : String(error);
      throw new SvcError('storage_unavailable', `The metadata database ${serverName(url)} cannot be used: ${reason}.`, { cause: error });
    }
    return db;
  }

  /** Runs `job` with the pool; a failure to reach the server rejects with `storage_unavailable`. */
  async run<T>(job: (sql: PgSql) => Promise<T>): Promise<T> {
    this.assertOpen();
    try {
      return await job(this.sql);
    } catch (error) {
      throw pgFailure(error);
    }
  }

  /** Runs `job` in one transaction on one connection; rolls back if it throws. */
  async transaction<T>(job: (sql: PgTransaction) => Promise<T>): Promise<T> {
    this.assertOpen();
    try {
      return (await this.sql.begin(job)) as T;
    } catch (error) {
      throw pgFailure(error);
    }
  }

  /** Throws (`storage_unavailable`) when the server does not answer. */
  async ping(): Promise<void> {
    await this.run((sql) => sql`SELECT 1`);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.sql.end({ timeout: CLOSE_TIMEOUT_SECONDS });
  }

  private assertOpen(): void {
    if (this.closed) throw new SvcError('not_ready', 'The metadata database is closed.');
  }

  /**
   * Applies the migrations `schema_migrations` does not list, all in one transaction under the
   * advisory lock: a node that waited for the lock finds them applied and does nothing.
   */
  private async migrate(migrations: PgMigration[]): Promise<void> {
    await this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY}::bigint)`;
      await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`;
      const applied = new Set((await tx<{ version: number }[]>`SELECT version FROM schema_migrations`).map((r) => r.version));
      for (const migration of migrations) {
        if (applied.has(migration.version)) continue;
        await tx.unsafe(migration.sql);
        await tx`INSERT INTO schema_migrations (version, name) VALUES (${migration.version}, ${migration.name})`;
      }
    });
  }
}

/** `host:port/database` of a PostgreSQL URL, without user or password. */
function serverName(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}
