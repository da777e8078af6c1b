import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseClientConfigOptions, type ClickHouseSettings } from '@clickhouse/client';
import { SvcError } from '@svc/protocol';
import { CH_MIGRATIONS, CREATE_SCHEMA_MIGRATIONS_SQL, type ChMigration, type ChStatement } from './ch-migrations';
import { chErrorCode, chFailure } from './ch-failure';
import { isPlainIdentifier, sqlInteger, sqlString } from './sql-literal';

/** How long one statement may run on the server; closing the client does not stop it on 18.16. */
export const DEFAULT_MAX_EXECUTION_TIME_SECONDS = 600;
/** How long the client waits for a response (or between chunks of one) before it gives up. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** How long `waitForMutations` waits by default before it fails with `storage_unavailable`. */
export const DEFAULT_MUTATION_WAIT_MS = 300_000;
/** How long one month's copy of a migration may run (server limit; the client waits a minute more). */
export const PARTITION_COPY_MAX_SECONDS = 3_600;
/** Between two looks at `system.mutations`. */
const MUTATION_POLL_INTERVAL_MS = 50;
/** SESSION_IS_LOCKED: the server had not released the session after its previous request yet. */
const SESSION_LOCKED_CH_CODE = 373;
/**
 * Pauses before another try of a request of a session the server still holds: from the first,
 * doubled up to the longest, until they add up to the total. A busy server may hold it well
 * beyond the few milliseconds it usually takes.
 */
const SESSION_LOCKED_FIRST_PAUSE_MS = 5;
const SESSION_LOCKED_LONGEST_PAUSE_MS = 200;
export const SESSION_LOCKED_TOTAL_PAUSE_MS = 1_500;

/** Rows a statement reads as a temporary table of its own (see `queryWithTable`). */
export interface ChTemporaryTable {
  /** A plain identifier. */
  name: string;
  /** Its columns, as in CREATE TABLE: written by the caller, never from data. */
  columns: string;
  /** The rows as TabSeparated text (see `tsvField`), one line each. */
  rows: string;
}

export interface ChDatabaseOptions {
  /** Server-side limit of one statement, seconds; default `DEFAULT_MAX_EXECUTION_TIME_SECONDS`. */
  maxExecutionTimeSeconds?: number;
  /** Client-side limit of one request, ms; default `DEFAULT_REQUEST_TIMEOUT_MS`. */
  requestTimeoutMs?: number;
  /** Migrations to apply at open; default `CH_MIGRATIONS` (tests pass others). */
  migrations?: ChMigration[];
  /** Clock of the migration records; default `Date.now`. */
  now?: () => number;
  /**
   * A connection other than HTTP to `url`: the dialect check runs the backend on the current
   * engine in process (npm `chdb`), whose connection has one current database, `default`.
   */
  connection?: ClickHouseClientConfigOptions['connection'];
}

/** A row as JSONEachRow gives it: 64-bit integers are strings (see `chNumber`). */
export type ChRow = Record<string, unknown>;

/**
 * Settings on every request. 18.16 quotes 64-bit integers in JSON and current releases do not
 * by default: pinning it makes both answer alike (read them with `chNumber`). 18.16 refuses
 * unknown settings, so only settings both know go here.
 */
function pinnedSettings(maxExecutionTimeSeconds: number): ClickHouseSettings {
  return { output_format_json_quote_64bit_integers: 1, max_execution_time: maxExecutionTimeSeconds };
}

/**
 * One ClickHouse database over HTTP (`@clickhouse/client`), with the schema migrated. Values go
 * into SQL only through sql-literal; failures to reach the server become `storage_unavailable`.
 * The client keeps a pool of keep-alive sockets and opens new ones as needed, so the database
 * recovers by itself once the server is back.
 */
export class ChDatabase {
  private closed = false;

  private constructor(
    private readonly client: ClickHouseClient,
    /** The database's name (a plain identifier). */
    readonly name: string,
  ) {}

  /**
   * Creates the database if missing and applies the pending migrations. An unreachable server
   * fails with `storage_unavailable` naming the server (never a password).
   */
  static async open(url: string, database: string, options: ChDatabaseOptions = {}): Promise<ChDatabase> {
    // A configuration mistake, found at start-up: letters, digits and `_` only (it is pasted into DDL).
    if (!isPlainIdentifier(database)) throw new Error(`Not a valid ClickHouse database name: ${JSON.stringify(database)}.`);
    const config = {
      url,
      request_timeout: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      clickhouse_settings: pinnedSettings(options.maxExecutionTimeSeconds ?? DEFAULT_MAX_EXECUTION_TIME_SECONDS),
      // Failures are thrown to the caller, which logs them once; the client would log each again.
      log: { level: ClickHouseLogLevel.OFF },
      ...(options.connection ? { connection: options.connection } : {}),
    };
    const client = createClient({ ...config, database });
    const db = new ChDatabase(client, database);
    try {
      // Over HTTP the database is a parameter of every request: it is created through a client
      // of `default`. A connection of its own has one database, which exists.
      if (!options.connection) {
        const admin = createClient({ ...config, database: 'default' });
        try {
          await admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
        } finally {
          await admin.close();
        }
      }
      // Month copies of a migration run through a client that waits as long as the server may work.
      const copyClient = () => createClient({ ...config, database, request_timeout: (PARTITION_COPY_MAX_SECONDS + 60) * 1000 });
      await db.migrate(options.migrations ?? CH_MIGRATIONS, options.now ?? Date.now, copyClient);
    } catch (error) {
      await client.close();
      const failure = chFailure(error);
      if (!(failure instanceof SvcError)) throw failure;
      const reason = error instanceof Error ? error.message : String(error);
      throw new SvcError('storage_unavailable', `The event database ${serverName(url)}/${database} cannot be used: ${reason}.`, { cause: error, headers: failure.headers });
    }
    return db;
  }

  /**
   * This database with `settings` on each of its queries and commands (a statement's own
   * settings win): a view through this object's methods, sharing its connection and its close.
   */
  withSettings(settings: ClickHouseSettings): ChDatabase {
    const view = Object.create(this) as ChDatabase;
    view.query = (sql, own) => this.query(sql, { ...settings, ...own });
    view.command = (sql, own) => this.command(sql, { ...settings, ...own });
    view.queryWithTable = (table, sql, own) => this.queryWithTable(table, sql, { ...settings, ...own });
    view.stream = (sql, own) => this.stream(sql, { ...settings, ...own });
    view.close = () => this.close();
    return view;
  }

  /** All rows of a SELECT (JSONEachRow). */
  async query<T = ChRow>(sql: string, settings?: ClickHouseSettings): Promise<T[]> {
    return this.run(async () => {
      const result = await this.client.query({ query: sql, format: 'JSONEachRow', clickhouse_settings: settings });
      return result.json<T>();
    });
  }

  /**
   * All rows of a SELECT that reads `table`, a temporary table filled with its rows first, in a
   * session of its own (temporary tables live in a session; 18.16 has no other way to take a
   * long list of values from a request body). Much cheaper for the server than the list as
   * SQL text: 34,300 ids cost it 10–20 ms of CPU this way, 80–140 ms split from one string
   * literal (docs/benchmarks.md). A balancer in front of several servers must send the
   * requests of one `session_id` to the same server.
   */
  async queryWithTable<T = ChRow>(table: ChTemporaryTable, sql: string, settings?: ClickHouseSettings): Promise<T[]> {
    if (!isPlainIdentifier(table.name)) throw new Error(`Not a table name: ${JSON.stringify(table.name)}`);
    const session_id = randomUUID();
    return this.run(async () => {
      await inSession(() => this.client.command({ query: `CREATE TEMPORARY TABLE ${table.name} (${table.columns})`, session_id }));
      await inSession(() => this.client.insert({ table: table.name, format: 'TabSeparated', values: Readable.from([Buffer.from(table.rows)], { objectMode: false }), session_id }));
      const rows = await inSession(async () => (await this.client.query({ query: sql, format: 'JSONEachRow', clickhouse_settings: settings, session_id })).json<T>());
      // Freed now rather than when the session expires, which frees it anyway: a failure here
      // must not fail a lookup that has its rows.
      await inSession(() => this.client.command({ query: `DROP TEMPORARY TABLE ${table.name}`, session_id })).catch(() => undefined);
      return rows;
    });
  }

  /** The rows of a SELECT a chunk at a time, in constant memory; stop early to cancel the read. */
  async *stream<T = ChRow>(sql: string, settings?: ClickHouseSettings): AsyncIterable<T[]> {
    this.assertOpen();
    let result;
    try {
      result = await this.client.query({ query: sql, format: 'JSONEachRow', clickhouse_settings: settings });
    } catch (error) {
      throw chFailure(error);
    }
    const stream = result.stream<T>();
    try {
      for await (const rows of stream) yield rows.map((row) => row.json<T>());
    } catch (error) {
      throw chFailure(error);
    } finally {
      // Stopped early: free the socket (the server finishes on its own, within max_execution_time).
      if (!stream.destroyed) stream.destroy();
    }
  }

  /** A statement without a result (DDL, ALTER, INSERT … SELECT). */
  async command(sql: string, settings?: ClickHouseSettings): Promise<void> {
    await this.run(() => this.client.command({ query: sql, clickhouse_settings: settings }));
  }

  /**
   * Inserts rows as JSONEachRow in one request: each request makes one part on the server, so
   * callers insert large batches. `table` must be a name the caller takes from its own schema.
   */
  async insert(table: string, rows: readonly object[]): Promise<void> {
    if (!rows.length) return;
    if (!isPlainIdentifier(table)) throw new Error(`Not a table name: ${JSON.stringify(table)}`);
    await this.run(() => this.client.insert({ table, values: rows as object[], format: 'JSONEachRow' }));
  }

  /**
   * Inserts JSONEachRow lines as they are (each ending with a newline), in one request: the
   * writer passes on the lines nodes encoded, without parsing them. `table` as for `insert`;
   * `columns`, the lines' members, named in the statement: a column a later migration adds is
   * then filled by its DEFAULT (on 18.16 a JSONEachRow insert without names writes the type's
   * zero for a missing member; current releases compute the DEFAULT either way).
   */
  async insertLines(table: string, lines: readonly Uint8Array[], columns?: readonly string[]): Promise<void> {
    if (!lines.length) return;
    if (!isPlainIdentifier(table)) throw new Error(`Not a table name: ${JSON.stringify(table)}`);
    if (columns && !columns.every(isPlainIdentifier)) throw new Error(`Not column names: ${JSON.stringify(columns)}`);
    const into = columns ? `${table} (${columns.join(', ')})` : table;
    await this.run(async () => {
      const result = await this.client.exec({ query: `INSERT INTO ${into} FORMAT JSONEachRow`, values: Readable.from(lines) });
      // Nothing to read: the request is done once the answer came.
      result.stream.destroy();
    });
  }

  /**
   * Waits until no mutation (`ALTER … DELETE/UPDATE`) of `table` in this database is still
   * running. 18.16 does not report a failed mutation, so one that never ends fails the wait
   * with `storage_unavailable` after `timeoutMs`.
   */
  async waitForMutations(table: string, timeoutMs = DEFAULT_MUTATION_WAIT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const sql = `SELECT count() AS pending FROM system.mutations
      WHERE database = ${sqlString(this.name)} AND table = ${sqlString(table)} AND is_done = 0`;
    for (;;) {
      const [row] = await this.query<{ pending: string }>(sql);
      if (Number(row?.pending ?? 0) === 0) return;
      if (Date.now() > deadline) {
        throw new SvcError('storage_unavailable', `A deletion in the event database (${table}) did not finish within ${timeoutMs} ms. Retry later.`);
      }
      await new Promise((resolve) => setTimeout(resolve, MUTATION_POLL_INTERVAL_MS));
    }
  }

  /** Throws (`storage_unavailable`) when the server does not answer. */
  async ping(): Promise<void> {
    await this.query('SELECT 1 AS ok');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }

  private async run<T>(job: () => Promise<T>): Promise<T> {
    this.assertOpen();
    try {
      return await job();
    } catch (error) {
      throw chFailure(error);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new SvcError('not_ready', 'The event database is closed.');
  }

  /**
   * Applies the migrations `schema_migrations` does not list. Without locks in ClickHouse,
   * nodes starting at once may both apply one; its statements are idempotent, so that is safe.
   */
  private async migrate(migrations: ChMigration[], now: () => number, copyClient: () => ClickHouseClient): Promise<void> {
    await this.command(CREATE_SCHEMA_MIGRATIONS_SQL);
    const rows = await this.query<{ version: number }>('SELECT DISTINCT version FROM schema_migrations');
    const applied = new Set(rows.map((row) => Number(row.version)));
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (applied.has(migration.version)) continue;
      const done = migration.doneWhen !== undefined && (await this.query(migration.doneWhen)).length > 0;
      if (!done) for (const statement of migration.statements) await this.runStatement(statement);
      for (const copy of migration.partitionCopies ?? []) await this.copyByPartition(copy, copyClient);
      await this.command(
        `INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (${sqlInteger(migration.version)}, ${sqlString(migration.name)}, ${sqlInteger(now())})`,
      );
    }
  }

  /** Runs a migration's statement; one with its own `doneWhen` only when not done (ch-migrations.ts, `ChStatement`). */
  private async runStatement(statement: string | ChStatement): Promise<void> {
    if (typeof statement === 'string') return this.command(statement);
    const done = async () => (await this.query(statement.doneWhen)).length > 0;
    if (await done()) return;
    try {
      await this.command(statement.sql);
    } catch (error) {
      if (!(await done())) throw error;
    }
  }

  /** Runs a migration's copy once per active month partition of its table, oldest first. */
  private async copyByPartition(copy: NonNullable<ChMigration['partitionCopies']>[number], copyClient: () => ClickHouseClient): Promise<void> {
    const rows = await this.query<{ partition: string }>(
      `SELECT DISTINCT partition FROM system.parts WHERE database = ${sqlString(this.name)} AND table = ${sqlString(copy.table)} AND active`,
    );
    const partitions = rows.map((row) => Number(row.partition)).filter((p) => Number.isInteger(p)).sort((a, b) => a - b);
    if (!partitions.length) return;
    const client = copyClient();
    try {
      for (const partition of partitions) {
        await this.run(() => client.command({ query: copy.statement(partition), clickhouse_settings: { max_execution_time: PARTITION_COPY_MAX_SECONDS } }));
      }
    } finally {
      await client.close();
    }
  }
}

/**
 * A number from a JSONEachRow value: 64-bit integers arrive as strings (pinned setting), the
 * others as numbers. Beyond ±2^53 precision is lost: the schema's 64-bit values (epoch ms,
 * campaign ids) stay below it.
 */
export function chNumber(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

/**
 * The server's clock, in whole epoch seconds: what the rollup bookkeeping compares its
 * `derived_at`, `claimed_at` and `touched_at` with (the nodes' clocks may differ from it).
 */
export async function serverSecond(db: Pick<ChDatabase, 'query'>): Promise<number> {
  const [row] = await db.query<{ now: string }>('SELECT toUInt32(now()) AS now');
  return chNumber(row!.now);
}

/**
 * Runs one request of a session, again while the server answers that it still holds the session:
 * 18.16 releases a session just after it sent the answer to the request before, so the next
 * one may come too early.
 */
export async function inSession<T>(request: () => Promise<T>, pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))): Promise<T> {
  let paused = 0;
  for (let pauseMs = SESSION_LOCKED_FIRST_PAUSE_MS; ; pauseMs = Math.min(2 * pauseMs, SESSION_LOCKED_LONGEST_PAUSE_MS)) {
    try {
      return await request();
    } catch (error) {
      if (chErrorCode(error) !== SESSION_LOCKED_CH_CODE || paused >= SESSION_LOCKED_TOTAL_PAUSE_MS) throw error;
      const ms = Math.min(pauseMs, SESSION_LOCKED_TOTAL_PAUSE_MS - paused);
      paused += ms;
      await pause(ms);
    }
  }
}

/** A value as a TabSeparated field: backslash, tab and line breaks escaped. */
export function tsvField(value: string | number): string {
  return typeof value === 'number' ? String(value) : value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

/** `host:port` of a URL, without user or password. */
function serverName(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(unparsable URL)';
  }
}
