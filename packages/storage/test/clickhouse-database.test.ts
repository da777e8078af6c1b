import { SvcError } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChDatabase, chNumber, inSession, SESSION_LOCKED_TOTAL_PAUSE_MS } from '../src/clickhouse/ch-database';
import { chErrorCode, chFailure } from '../src/clickhouse/ch-failure';
import { CH_MIGRATIONS, type ChMigration } from '../src/clickhouse/ch-migrations';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';
import { freePort } from '../../../apps/server/test/child-server';
import { insertEarlierEvents } from './clickhouse-events';
import { startClickHouseProxy } from './clickhouse-proxy';
import { eventRow } from './event-log-rows';

describe('ClickHouse failures', () => {
  it('reads the code from the text of an 18.16 error and of a current one', () => {
    expect(chErrorCode(new Error('Code: 60, e.displayText() = DB::Exception: Table x.y doesn\'t exist., e.what() = DB::Exception'))).toBe(60);
    expect(chErrorCode(new Error('Code: 241. DB::Exception: Memory limit exceeded. (MEMORY_LIMIT_EXCEEDED) (version 26.7.1)'))).toBe(241);
    expect(chErrorCode(new Error('no code here'))).toBeNull();
  });

  it('turns an unreachable server or a busy one into storage_unavailable, and leaves statement errors alone', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    for (const error of [refused, new Error('Timeout error.'), new Error('Code: 252, e.displayText() = DB::Exception: Too many parts')]) {
      const failure = chFailure(error);
      expect(failure).toBeInstanceOf(SvcError);
      expect((failure as SvcError).code).toBe('storage_unavailable');
      expect((failure as SvcError).headers?.['retry-after']).toBeDefined();
    }
    const syntax = new Error('Code: 62, e.displayText() = DB::Exception: Syntax error');
    expect(chFailure(syntax)).toBe(syntax);
    // Not a busy server: the same insert fails again, smaller ones go in (the writer splits it).
    const partitions = new Error("Code: 252, e.displayText() = DB::Exception: Too many partitions for single INSERT block (more than 100). The limit is controlled by 'max_partitions_per_insert_block' setting.");
    expect(chFailure(partitions)).toBe(partitions);
  });
});

describe('a request of a ClickHouse session the server still holds', () => {
  const locked = () => new Error('Code: 373, e.displayText() = DB::Exception: Session is locked by a concurrent client., e.what() = DB::Exception');

  it('is tried again with growing pauses for up to about 1.5 s in all, then fails', async () => {
    const pauses: number[] = [];
    let tries = 0;
    const failed = await inSession(async () => (tries++, Promise.reject(locked())), async (ms) => void pauses.push(ms)).then(() => null, (error: unknown) => error);
    expect(chErrorCode(failed)).toBe(373);
    expect(tries).toBe(pauses.length + 1);
    expect(pauses[0]).toBeLessThanOrEqual(10);
    expect(pauses.reduce((sum, ms) => sum + ms, 0)).toBe(SESSION_LOCKED_TOTAL_PAUSE_MS);
    for (let i = 1; i < pauses.length - 1; i++) expect(pauses[i]).toBeGreaterThanOrEqual(pauses[i - 1]!);
  });

  it('succeeds once the session is released, and is not tried again for another failure', async () => {
    let tries = 0;
    expect(await inSession(async () => (++tries < 10 ? Promise.reject(locked()) : 'rows'), async () => {})).toBe('rows');
    tries = 0;
    await expect(inSession(async () => (tries++, Promise.reject(new Error('Code: 60, no such table'))), async () => {})).rejects.toThrow('Code: 60');
    expect(tries).toBe(1);
  });
});

const available = clickhouseAvailable();

describe.runIf(available)('ClickHouse database', () => {
  let server: ClickHouseServer;
  let databases = 0;
  beforeAll(async () => {
    server = await startClickHouse();
  });
  afterAll(async () => {
    await server?.stop();
  });

  const sql = async (text: string): Promise<string> => {
    const response = await fetch(server.url, { method: 'POST', body: text });
    const body = await response.text();
    if (!response.ok) throw new Error(body);
    return body;
  };

  it('creates the database and its tables, and records each migration', async () => {
    const name = `svc_db_${++databases}`;
    const db = await ChDatabase.open(server.url, name, { now: () => 1_700_000_000_000 });
    expect(await sql(`EXISTS TABLE ${name}.events`)).toBe('1\n');
    expect(await sql(`EXISTS TABLE ${name}.rejected_events`)).toBe('1\n');
    const recorded = await db.query<{ version: number; applied_at_ms: string }>('SELECT version, applied_at_ms FROM schema_migrations ORDER BY version');
    expect(recorded).toEqual(CH_MIGRATIONS.map((m) => ({ version: m.version, applied_at_ms: '1700000000000' })));
    await db.close();
  });

  it('applies only the migrations not yet recorded, also when four nodes open at once', async () => {
    const name = `svc_db_${++databases}`;
    const extra: ChMigration = { version: 1_000, name: 'a table', statements: ['CREATE TABLE IF NOT EXISTS extra (x UInt8) ENGINE = MergeTree ORDER BY x'] };
    const opened = await Promise.all(Array.from({ length: 4 }, () => ChDatabase.open(server.url, name, { now: () => 1 })));
    await Promise.all(opened.map((db) => db.close()));
    const again = await ChDatabase.open(server.url, name, { migrations: [...CH_MIGRATIONS, extra], now: () => 2 });
    const rows = await again.query<{ version: number; opens: string }>(
      'SELECT version, toString(groupUniqArray(applied_at_ms)) AS opens FROM schema_migrations GROUP BY version ORDER BY version',
    );
    // The first migration was applied by the first opens only; the new one by the last open.
    expect(rows).toEqual([...CH_MIGRATIONS.map((m) => ({ version: m.version, opens: '[1]' })), { version: 1_000, opens: '[2]' }]);
    expect(await sql(`EXISTS TABLE ${name}.extra`)).toBe('1\n');
    await again.close();
  });

  it('refuses a database name that is not a plain identifier', async () => {
    await expect(ChDatabase.open(server.url, 'x; DROP DATABASE default')).rejects.toThrow(/database name/);
  });

  it('answers 64-bit integers as strings on every version, read with chNumber', async () => {
    const db = await ChDatabase.open(server.url, `svc_db_${++databases}`);
    const [row] = await db.query<{ big: unknown; small: unknown }>('SELECT toInt64(9007199254740991) AS big, toUInt32(7) AS small');
    expect(row).toEqual({ big: '9007199254740991', small: 7 });
    expect(chNumber(row!.big)).toBe(Number.MAX_SAFE_INTEGER);
    await db.close();
  });

  it('inserts rows and streams them back a chunk at a time; a stream stopped early leaves the database usable', async () => {
    const db = await ChDatabase.open(server.url, `svc_db_${++databases}`);
    await db.command('CREATE TABLE numbers_copy (n UInt64, s String) ENGINE = MergeTree ORDER BY n');
    await db.insert('numbers_copy', Array.from({ length: 50_000 }, (_, n) => ({ n, s: `'\\${n}\u0000` })));
    let seen = 0;
    let chunks = 0;
    for await (const rows of db.stream<{ n: string; s: string }>('SELECT n, s FROM numbers_copy ORDER BY n')) {
      for (const row of rows) expect(row.s).toBe(`'\\${chNumber(row.n)}\u0000`);
      seen += rows.length;
      chunks++;
    }
    expect(seen).toBe(50_000);
    expect(chunks).toBeGreaterThan(1);
    for await (const rows of db.stream('SELECT number FROM system.numbers LIMIT 10000000')) {
      expect(rows.length).toBeGreaterThan(0);
      break;
    }
    expect(await db.query('SELECT count() AS n FROM numbers_copy')).toEqual([{ n: '50000' }]);
    await db.close();
  });

  it('waits for a deletion to be done', async () => {
    const db = await ChDatabase.open(server.url, `svc_db_${++databases}`);
    await db.command('CREATE TABLE doomed (n UInt64) ENGINE = MergeTree ORDER BY n');
    for (let part = 0; part < 5; part++) await db.insert('doomed', Array.from({ length: 1_000 }, (_, i) => ({ n: part * 1_000 + i })));
    await db.command('ALTER TABLE doomed DELETE WHERE n % 2 = 0');
    await db.waitForMutations('doomed');
    expect(await db.query('SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND is_done = 0')).toEqual([{ n: '0' }]);
    expect(await db.query('SELECT count() AS n FROM doomed')).toEqual([{ n: '2500' }]);
    await db.close();
  });

  it('answers a lookup through a temporary table with its rows even when dropping the table afterwards fails', async () => {
    const proxy = await startClickHouseProxy(server.url);
    try {
      const db = await ChDatabase.open(proxy.url, `svc_db_${++databases}`);
      proxy.refuse = { match: /DROP TEMPORARY TABLE/, status: 500, body: 'Code: 999, e.displayText() = DB::Exception: The drop failed, e.what() = DB::Exception' };
      const rows = await db.queryWithTable<{ id: number }>({ name: 'wanted', columns: 'id UInt32', rows: '2\n1\n' }, 'SELECT id FROM wanted ORDER BY id');
      expect(rows).toEqual([{ id: 1 }, { id: 2 }]);
      expect(proxy.requests.filter((text) => /DROP TEMPORARY TABLE/.test(text))).toHaveLength(1);
      await db.close();
    } finally {
      await proxy.close();
    }
  });

  it('gives a view settings of its own on every statement, under a statement\'s own, through the same connection', async () => {
    const db = await ChDatabase.open(server.url, `svc_db_${++databases}`);
    const setting = `SELECT value FROM system.settings WHERE name = 'max_threads'`;
    const view = db.withSettings({ max_threads: 1 });
    expect((await view.query<{ value: string }>(setting))[0]?.value).toBe('1');
    expect((await view.query<{ value: string }>(setting, { max_threads: 3 }))[0]?.value).toBe('3');
    expect((await db.query<{ value: string }>(setting))[0]?.value).not.toBe('1');
    await view.command('CREATE TABLE view_made (x UInt8) ENGINE = Memory');
    expect(await db.query('SELECT * FROM view_made')).toEqual([]);
    await db.command('DROP TABLE view_made');
    // Closing the view closes the database.
    await view.close();
    await expect(db.query('SELECT 1')).rejects.toMatchObject({ code: 'not_ready' });
  });

  it('keeps a statement error as it is, with its code', async () => {
    const db = await ChDatabase.open(server.url, `svc_db_${++databases}`);
    const error = await db.query('SELECT * FROM no_such_table').catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(SvcError);
    expect(chErrorCode(error)).toBe(60);
    await db.close();
  });

  it('fails with storage_unavailable while the server is down, and works again once it is back', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const refused = await ChDatabase.open(nobody, 'svc').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SvcError);
    expect((refused as SvcError).code).toBe('storage_unavailable');
    expect((refused as SvcError).message).toContain(new URL(nobody).host);

    const db = await ChDatabase.open(server.url, `svc_db_${++databases}`, { requestTimeoutMs: 5_000 });
    await server.kill();
    try {
      const down = await db.ping().catch((e: unknown) => e);
      expect(down).toBeInstanceOf(SvcError);
      expect((down as SvcError).code).toBe('storage_unavailable');
    } finally {
      await server.restart();
    }
    await db.ping();
    await db.close();
    await expect(db.ping()).rejects.toMatchObject({ code: 'not_ready' });
  });

  it('upgrades a database of the first schema: event ids are copied a month at a time, each once, and a copy run again is harmless', async () => {
    const name = `svc_db_${++databases}`;
    const first = await ChDatabase.open(server.url, name, { migrations: CH_MIGRATIONS.filter((m) => m.version === 1) });
    const day = 86_400_000;
    // Four months (Jan 31 runs into Feb; Mar, Jul 2024), two tenants, one event twice (a retried batch).
    const events = [Date.UTC(2024, 0, 31), Date.UTC(2024, 2, 1), Date.UTC(2024, 6, 15)].flatMap((start, month) =>
      Array.from({ length: 20 }, (_, i) => eventRow(month * 100 + i, { tenantSeq: 1 + (i % 2), timestampMs: start + (i % 3) * day })),
    );
    await insertEarlierEvents(first, events);
    await insertEarlierEvents(first, events.slice(0, 1));
    await first.close();

    const proxy = await startClickHouseProxy(server.url);
    try {
      const upgraded = await ChDatabase.open(proxy.url, name);
      const copies = proxy.requests.filter((text) => /INSERT INTO event_ids/.test(text));
      expect(copies).toHaveLength(4);
      for (const copy of copies) expect(copy).toMatch(/max_execution_time=3600/);
      await upgraded.close();
    } finally {
      await proxy.close();
    }

    const db = await ChDatabase.open(server.url, name);
    const ids = async () => db.query<{ tenant_seq: number; event_id: string; n: string }>(
      'SELECT tenant_seq, event_id, count() AS n FROM event_ids FINAL GROUP BY tenant_seq, event_id ORDER BY tenant_seq, event_id',
    );
    const expected = events.map((e) => ({ tenant_seq: e.tenantSeq, event_id: e.eventId, n: '1' }))
      .sort((a, b) => a.tenant_seq - b.tenant_seq || a.event_id.localeCompare(b.event_id));
    expect(await ids()).toEqual(expected);
    // The copy again, as a node that restarts during the migration runs it.
    const again = await ChDatabase.open(server.url, name, { migrations: [...CH_MIGRATIONS, { ...CH_MIGRATIONS[1]!, version: 1_000 }] });
    await again.close();
    expect(await ids()).toEqual(expected);
    // The hours of the events stored before the dashboard's rollups are marked for derivation.
    const hours = await db.query<{ tenant_seq: number; hour: string }>('SELECT DISTINCT tenant_seq, hour FROM touched_hours ORDER BY tenant_seq, hour');
    const eventHours = [...new Set(events.map((e) => `${e.tenantSeq}:${Math.floor(e.timestampMs / 3_600_000) * 3_600_000}`))].sort();
    expect(hours.map((row) => `${row.tenant_seq}:${row.hour}`).sort()).toEqual(eventHours);
    await db.close();
  });
});
