import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { SvcError } from '@svc/protocol';
import { MIGRATIONS } from './migrations';
import { RollupQueue } from './rollup-queue';
import { SerialQueue } from './serial-queue';
import { isStorageFailure, storageFailureReason } from './storage-failure';
import { CREATE_UNDECODABLE_EVENTS_SQL, isUndecodableTextError, setAsideUndecodableEvents, tenantScope, type UndecodableEvent } from './undecodable-events';
import { keepByteOrderMarks } from './varchar-decoding';
import { copyIntoFreshFile, removeUnfinishedRewrite, replaceWithFreshFile } from './database-rewrite';

keepByteOrderMarks();

export const DATABASE_FILE_NAME = 'svc.duckdb';

const BYTE_UNITS: Record<string, number> = { B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40 };

/** A size as DuckDB prints its settings (`122.0 MiB`, `18.8 GiB`) in bytes; NaN if it is not one. */
export function parseByteSize(text: string): number {
  const match = /^\s*([\d.]+)\s*([KMGT]?i?B)\s*$/.exec(text);
  const unit = match ? BYTE_UNITS[match[2]!] : undefined;
  return match && unit ? Number(match[1]) * unit : Number.NaN;
}
/**
 * Read connections: the dashboard's six panel queries run side by side instead of in turn
 * (measured on 10 M events: one broadcast's overview 135 → ~90 ms).
 */
const READ_CONNECTIONS = 4;
/**
 * WAL size at which a commit also checkpoints (DuckDB's default is 16 MB). A checkpoint
 * rewrites the events' primary-key index, so it costs more the bigger the table is (about
 * 0.5 s at a million rows): at the default, under ingest, nearly every second commit paid for
 * one. Bigger means rarer checkpoints but a longer WAL replay after a crash (about 5 s for
 * 256 MiB, a million events); a clean close checkpoints.
 */
export const CHECKPOINT_THRESHOLD_MIB = 256;
/**
 * How much a probe write puts in the WAL. A disk with room for a few bytes only would let a tiny
 * probe through while every real commit fails; one DuckDB block is about what a large ingest
 * request needs.
 */
const STORAGE_PROBE_BYTES = 256 * 1024;
/**
 * Longest a rewrite waits for the streamed reads under way (an export's current time window)
 * to end; past it the rewrite gives up, to be tried again later, and the reads go on.
 */
const REWRITE_STREAM_WAIT_MS = 60_000;
/** What a refused write tells clients to wait before retrying. */
export const STORAGE_RETRY_AFTER_SECONDS = 5;

/**
 * Threads one query may use. The service runs many small statements side by side (commits,
 * the rollups beside them, the dashboard's six panels on four read connections), so its
 * parallelism comes from the connections: with one thread per query, DuckDB used ≈ 20% less
 * CPU per ingested event (measured: 23 → 18 µs in process) and the 30-day dashboard overview
 * took as long as with one thread per core (p95 396 against 379 ms on 10 M events).
 */
export const DEFAULT_QUERY_THREADS = 1;

export type Row = Record<string, unknown>;

export interface DatabaseOptions {
  /** DuckDB's memory_limit (cache and working memory), e.g. `512MB`; DuckDB's default when unset. */
  memoryLimit?: string;
  /** Threads one query may use (DuckDB's `threads`); default `DEFAULT_QUERY_THREADS`. */
  threads?: number;
}

/**
 * The embedded database: one DuckDB file under the data folder. Writes go through one
 * connection in strict order (transactions never interleave), except the dashboard's rollups,
 * which a second connection derives beside them (see RollupQueue); reads use other
 * connections and see committed data only.
 */
export class DuckDbDatabase {
  private readonly writes = new SerialQueue();
  private readonly sideWrites = new SerialQueue();
  /** The dashboard's rollups of committed events, derived beside the commits. */
  readonly rollups = new RollupQueue(this);
  private readonly reads: SerialQueue[];
  private nextReader = 0;
  private closed = false;
  /** The last write the disk refused, until a probe write succeeds. */
  private writeFailure: unknown = null;
  /** Writes the disk refused since the database was opened. */
  private refusedWrites = 0;
  /** Events set aside as unreadable since the database was opened (see undecodable-events). */
  private undecodableCount = 0;
  /** Those set aside before anyone listened (at start-up), kept for the first listener. */
  private unreported: UndecodableEvent[] = [];
  private undecodableListeners: Array<(events: UndecodableEvent[]) => void> = [];
  /** While the file is being replaced (see `rewrite`), reads wait for this. */
  private readGate: Promise<void> | null = null;
  /** While a rewrite waits for long reads to end or runs, new long reads wait for this. */
  private streamGate: Promise<void> | null = null;
  private openStreams = 0;
  private streamsEnded: Array<() => void> = [];
  /** Told each time the connections are new (their temp tables are gone). */
  private readonly reconnectListeners: Array<() => void> = [];

  private constructor(
    readonly path: string,
    private readonly instanceOptions: Record<string, string>,
    private instance: DuckDBInstance,
    private writer: DuckDBConnection,
    private sideWriter: DuckDBConnection,
    private readers: DuckDBConnection[],
  ) {
    this.reads = readers.map(() => new SerialQueue());
  }

  /**
   * Opens (creating if needed) `<dataDir>/svc.duckdb` and applies pending migrations. A folder
   * that cannot be used (read-only, full, missing permissions) fails with `storage_unavailable`
   * and a one-line message naming the folder.
   */
  static async open(dataDir: string, options: DatabaseOptions = {}): Promise<DuckDbDatabase> {
    const path = join(dataDir, DATABASE_FILE_NAME);
    const instanceOptions = {
      checkpoint_threshold: `${CHECKPOINT_THRESHOLD_MIB}MiB`,
      ...(options.memoryLimit ? { memory_limit: options.memoryLimit } : {}),
      threads: String(options.threads ?? DEFAULT_QUERY_THREADS),
    };
    let instance: DuckDBInstance;
    try {
      mkdirSync(dataDir, { recursive: true });
      instance = await DuckDBInstance.create(path, instanceOptions);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/lock/i.test(message)) {
        throw new SvcError(
          'database_locked',
          `The database ${path} is in use by another process (is a server running on this data folder?).`,
          { cause: error },
        );
      }
      throw unusableFolder(dataDir, error);
    }
    // Only once the lock is ours (the file may belong to a running server). A leftover that
    // cannot be removed never stops the start: the next rewrite tries again.
    try {
      removeUnfinishedRewrite(path);
    } catch {
      // (the rewrite reports it)
    }
    const readers = await Promise.all(Array.from({ length: READ_CONNECTIONS }, () => instance.connect()));
    const db = new DuckDbDatabase(path, instanceOptions, instance, await instance.connect(), await instance.connect(), readers);
    try {
      await db.migrate();
      await db.writer.run(CREATE_UNDECODABLE_EVENTS_SQL);
      await db.rollups.recover();
      // A folder that lets the file open but refuses writes (full disk, size limit) fails here, not at the first request.
      await db.probeWrites();
    } catch (error) {
      db.closeConnections();
      throw isStorageFailure(error) || (error instanceof SvcError && error.code === 'storage_unavailable')
        ? unusableFolder(dataDir, error instanceof SvcError ? error.cause : error)
        : error;
    }
    return db;
  }

  /**
   * Runs `job` on the write connection after every earlier write job. A job that fails because
   * the disk refuses the write (full, read-only, size limit) rejects with `storage_unavailable`,
   * and readiness fails until a probe write succeeds again.
   */
  write<T>(job: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.refusals(() => this.writes.run(() => job(this.writer)));
  }

  /**
   * Runs `job` on the second write connection, after every earlier job of that connection but
   * beside those of `write`: for writes that touch no table `write` jobs write to at the same time.
   */
  sideWrite<T>(job: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.refusals(() => this.sideWrites.run(() => job(this.sideWriter)));
  }

  /** Runs `job` on the write connection with both write connections to itself. */
  exclusiveWrite<T>(job: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.refusals(() => this.writes.run(() => this.sideWrites.run(() => job(this.writer))));
  }

  /**
   * A write the disk refuses (full, read-only, size limit) rejects with `storage_unavailable`,
   * and readiness fails until a probe write succeeds again.
   */
  private refusals<T>(write: () => Promise<T>): Promise<T> {
    this.assertOpen();
    return write().catch((error: unknown) => {
      if (error instanceof SvcError || !isStorageFailure(error)) throw error;
      this.writeFailure = error;
      this.refusedWrites++;
      throw new SvcError('storage_unavailable', 'The service cannot store data right now; nothing of this request was stored. Retry later.', {
        cause: error,
        headers: { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
      });
    });
  }

  /** Runs `job` in one transaction on the write connection; rolls back if it throws. */
  transaction<T>(job: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.write(async (connection) => {
      await connection.run('BEGIN TRANSACTION');
      try {
        const result = await job(connection);
        await connection.run('COMMIT');
        return result;
      } catch (error) {
        await connection.run('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  /** Rows of a read-only query, as plain JS objects; reads take turns over several connections. */
  query(sql: string, values?: DuckDBValue[]): Promise<Row[]> {
    this.assertOpen();
    return this.gatedQuery(sql, values);
  }

  private async gatedQuery(sql: string, values?: DuckDBValue[]): Promise<Row[]> {
    while (this.readGate) await this.readGate;
    this.assertOpen();
    const index = this.nextReader++ % this.readers.length;
    return this.reads[index]!.run(async () => (await this.readers[index]!.runAndReadAll(sql, values)).getRowObjectsJS() as Row[]);
  }

  /**
   * `query` for a read that may parse the JSON text of one tenant's events: if DuckDB cannot
   * decode an event's text, the tenant's unreadable events are set aside and the read is done
   * again, so such a row never keeps a dashboard panel or a room from answering.
   */
  async queryTenantEvents(tenantSeq: number, sql: string, values?: DuckDBValue[]): Promise<Row[]> {
    try {
      return await this.query(sql, values);
    } catch (error) {
      if (!isUndecodableTextError(error)) throw error;
      if (!(await this.exclusiveWrite((c) => this.setAsideUndecodable(c, tenantScope(tenantSeq))))) throw error;
      return this.query(sql, values);
    }
  }

  /**
   * The first column (text) of a long read's rows, a chunk of rows at a time, on a connection
   * of its own so that it holds up neither writes nor other reads.
   */
  async *streamColumn(sql: string, values?: DuckDBValue[]): AsyncIterable<string[]> {
    this.assertOpen();
    while (this.streamGate) await this.streamGate;
    this.assertOpen();
    this.openStreams++;
    let connection: DuckDBConnection | null = null;
    try {
      connection = await this.instance.connect();
      const result = await connection.stream(sql, values);
      for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        const values = chunk.getColumnValues(0) as string[];
        // Frees the chunk's string data now: the JS wrapper holding it may wait long for a GC.
        chunk.reset();
        yield values;
      }
    } finally {
      connection?.closeSync();
      if (--this.openStreams === 0) for (const ended of this.streamsEnded.splice(0)) ended();
    }
  }

  /** `listener` runs each time the connections are replaced (after `rewrite`): connection-local state is gone. */
  onReconnect(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  /**
   * Replaces the database file by a fresh copy of its live rows, so that nothing deleted stays
   * in any file (see database-rewrite). Streamed reads under way (an export's current time
   * window) end first, and new ones (an export's next window) wait for the swap; writes wait
   * while the rows are copied (they are queued, never lost); short reads wait only while the
   * file is swapped. Crash-safe at every step: the database is either the old file or the
   * complete new one.
   */
  async rewrite(): Promise<void> {
    this.assertOpen();
    let openStreams!: () => void;
    const streamGate = new Promise<void>((resolve) => (openStreams = resolve));
    while (this.streamGate) await this.streamGate;
    this.streamGate = streamGate;
    let openReads: (() => void) | null = null;
    try {
      if (this.openStreams > 0) await this.streamsEnd();
      await this.exclusiveWrite(async (writer) => {
        await writer.run('CHECKPOINT');
        await copyIntoFreshFile(writer, this.path);
        this.readGate = new Promise<void>((resolve) => (openReads = resolve));
        await Promise.all(this.reads.map((queue) => queue.drain()));
        this.closeConnectionsOnly();
        let replaced: unknown = null;
        try {
          replaceWithFreshFile(this.path);
        } catch (error) {
          replaced = error;
        }
        // The old file when the swap was refused, the new one otherwise.
        await this.reconnect();
        if (replaced) throw replaced;
      });
    } finally {
      this.readGate = null;
      (openReads as (() => void) | null)?.();
      this.streamGate = null;
      openStreams();
    }
  }

  private async streamsEnd(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const ended = new Promise<boolean>((resolve) => this.streamsEnded.push(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), REWRITE_STREAM_WAIT_MS)));
    const inTime = await Promise.race([ended, late]);
    clearTimeout(timer);
    if (!inTime) throw new Error(`streamed reads went on for ${REWRITE_STREAM_WAIT_MS / 1000} s; the database file was not rewritten`);
  }

  private async reconnect(): Promise<void> {
    this.instance = await DuckDBInstance.create(this.path, this.instanceOptions);
    this.writer = await this.instance.connect();
    this.sideWriter = await this.instance.connect();
    this.readers = await Promise.all(this.readers.map(() => this.instance.connect()));
    for (const listener of this.reconnectListeners) listener();
  }

  /** Rows of a statement on the write connection (for reads that must see the writer's state). */
  async writeQuery(connection: DuckDBConnection, sql: string, values?: DuckDBValue[]): Promise<Row[]> {
    return (await connection.runAndReadAll(sql, values)).getRowObjectsJS() as Row[];
  }

  /**
   * Throws when the database cannot take work: reads must answer, and after a failed write a
   * probe write must succeed (a healthy database is not written to by readiness checks).
   */
  async ping(): Promise<void> {
    await this.query('SELECT 1');
    if (this.writeFailure) await this.probeWrites();
  }

  private async probeWrites(): Promise<void> {
    // Random text: DuckDB would store a repeated character in a few bytes.
    const padding = randomBytes((STORAGE_PROBE_BYTES * 3) / 4).toString('base64');
    await this.write((c) => c.run('INSERT OR REPLACE INTO storage_probe VALUES (1, now(), $1)', [padding]));
    this.writeFailure = null;
  }

  /**
   * Sets the events of `scope` that DuckDB's JSON reader refuses aside (see undecodable-events),
   * on `connection` (a write connection the caller holds, outside a transaction), and reports
   * them. Returns how many there were.
   */
  async setAsideUndecodable(connection: DuckDBConnection, scope: string): Promise<number> {
    const events = await setAsideUndecodableEvents(connection, scope);
    if (!events.length) return 0;
    this.undecodableCount += events.length;
    if (this.undecodableListeners.length) for (const listener of this.undecodableListeners) listener(events);
    else this.unreported.push(...events);
    return events.length;
  }

  /** Calls `listener` with each lot of events set aside, and first with those set aside before (at start-up). */
  onUndecodableEvents(listener: (events: UndecodableEvent[]) => void): void {
    this.undecodableListeners.push(listener);
    if (this.unreported.length) listener(this.unreported.splice(0));
  }

  /** Events set aside as unreadable since the database was opened. */
  undecodableEventCount(): number {
    return this.undecodableCount;
  }

  /** Writes the disk refused (full, read-only, size limit) since the database was opened. */
  refusedWriteCount(): number {
    return this.refusedWrites;
  }

  /** DuckDB's memory_limit in bytes (its cache and working memory together). */
  async memoryLimitBytes(): Promise<number> {
    const [row] = await this.query("SELECT current_setting('memory_limit') AS setting");
    return parseByteSize(String(row?.setting ?? ''));
  }

  /** What DuckDB's buffer manager holds now, data cache included. */
  async memoryBytes(): Promise<number> {
    const rows = await this.query('SELECT sum(memory_usage_bytes) AS bytes FROM duckdb_memory()');
    return Number(rows[0]?.bytes ?? 0);
  }

  /** Waits for queued work, checkpoints the WAL into the file and closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.writes.drain();
    await this.rollups.settled();
    this.rollups.stop();
    await this.sideWrites.drain();
    await Promise.all(this.reads.map((queue) => queue.drain()));
    this.closed = true;
    await this.writer.run('CHECKPOINT').catch(() => undefined);
    this.closeConnections();
  }

  private closeConnections(): void {
    this.closed = true;
    this.rollups.stop();
    this.closeConnectionsOnly();
  }

  private closeConnectionsOnly(): void {
    this.writer.closeSync();
    this.sideWriter.closeSync();
    for (const reader of this.readers) reader.closeSync();
    this.instance.closeSync();
  }

  private assertOpen(): void {
    if (this.closed) throw new SvcError('not_ready', 'The database is closed.');
  }

  private async migrate(): Promise<void> {
    await this.writer.run(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)',
    );
    const rows = (await this.writer.runAndReadAll('SELECT max(version) AS v FROM schema_migrations')).getRowObjectsJS();
    const current = Number(rows[0]?.v ?? 0);
    for (const migration of MIGRATIONS.filter((m) => m.version > current)) {
      await this.transaction(async (connection) => {
        await connection.run(migration.sql);
        await connection.run('INSERT INTO schema_migrations VALUES ($1, $2, now())', [migration.version, migration.name]);
      });
    }
  }
}

function unusableFolder(dataDir: string, error: unknown): SvcError {
  return new SvcError('storage_unavailable', `The data folder ${dataDir} cannot be used: ${storageFailureReason(error)}.`, { cause: error });
}
