import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { ChDatabase, serverSecond } from '../src/clickhouse/ch-database';
import { SESSION_HOURS } from '../src/clickhouse/ch-rollups';
import { RETIRED_TABLES } from '../src/clickhouse/ch-rollup-retirement';
import { ClickHouseAnalyticsStore, RETIRE_INTERVAL_MS } from '../src/clickhouse/clickhouse-analytics-store';
import { dataset, filters, pollsOf } from './analytics-dataset';
import { expectModel, nextSecond, pollLookup, storeWithCopies } from './clickhouse-analytics-checks';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';

const available = clickhouseAvailable();
/** Hours are derived as soon as asked (a second after their last insert). */
const DERIVE_AT_ONCE = { quietSeconds: 0, settleSeconds: 1 };
/** Derivations begun this long ago are retired in these tests (the service waits 20 minutes). */
const RETIRE_AFTER_SECONDS = 2;

describe.skipIf(!available)('retiring the rollup rows of older derivations on ClickHouse', () => {
  let server: ClickHouseServer;
  beforeAll(async () => {
    server = await startClickHouse();
  }, 60_000);
  afterAll(() => server?.stop());

  const derivationsOf = async (db: ChDatabase, table: string) =>
    (await db.query<{ derivation: string }>(`SELECT DISTINCT toString(derivation) AS derivation FROM ${table} ORDER BY derivation`)).map((row) => row.derivation);
  const rowsOf = async (db: ChDatabase, table: string, condition = '1') => Number((await db.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE ${condition}`))[0]!.n);
  /** A session_hours row of `hour` (copied from one there) under another derivation. */
  const addSessionRow = (db: ChDatabase, hour: string, derivation: number, derivedAt: string) =>
    db.command(`INSERT INTO session_hours SELECT ${derivedAt} AS derived_at, toUInt64(${derivation}) AS derivation, tenant_seq, hour, broadcast_id, campaign_id, country,
      user_id, session_key, viewer_key, first_ms, last_ms, joined, engaged FROM session_hours WHERE hour = ${hour} LIMIT 1`);

  it('deletes the rows of derivations a newer one replaced and of derivations cut short, and keeps every row a reader may use', async () => {
    const db = await ChDatabase.open(server.url, await server.createDatabase());
    const events = dataset(8, 1);
    await storeWithCopies(db, events);
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), DERIVE_AT_ONCE);
    await nextSecond();
    while ((await store.deriveHours()) > 0);
    const first = await derivationsOf(db, 'rollup_versions');
    const hours = (await db.query<{ hour: string }>('SELECT DISTINCT toString(hour) AS hour FROM rollup_versions ORDER BY hour')).map((row) => row.hour);
    expect(hours.length).toBeGreaterThan(2);

    // A derivation cut short long ago (never listed): one row, too few to be worth a deletion yet.
    await addSessionRow(db, hours[0]!, 7, `toUInt32(now()) - 3600`);
    /** The newest second a derivation began in, of those listed or of the rows of `table` matching `condition`. */
    const newestStart = async (table = 'rollup_versions', condition = '1') =>
      Number((await db.query<{ at: string }>(`SELECT toString(max(derived_at)) AS at FROM ${table} WHERE ${condition}`))[0]!.at);
    const waitPast = async (at: number, seconds = RETIRE_AFTER_SECONDS) => {
      while ((await serverSecond(db)) - at <= seconds) await nextSecond();
    };
    await waitPast(await newestStart(), RETIRE_AFTER_SECONDS + 5);
    let retired = await store.retireRows(RETIRE_AFTER_SECONDS);
    expect(retired.find((r) => r.table === SESSION_HOURS.table)).toMatchObject({ retired: 1, deleting: false });
    expect(retired.filter((r) => r.table !== SESSION_HOURS.table).every((r) => r.retired === 0)).toBe(true);

    // Every hour stored into again (late events, a deletion…) and derived again.
    await db.command(`INSERT INTO touched_hours (tenant_seq, hour, touched_at) SELECT DISTINCT tenant_seq, hour, toUInt32(now()) FROM rollup_versions`);
    await nextSecond();
    while ((await store.deriveHours()) > 0);
    const newest = (await derivationsOf(db, 'rollup_versions')).filter((d) => !first.includes(d));
    expect(newest.length).toBeGreaterThan(0);
    // While the newer derivation is recent, a reader may still be reading the one it replaced:
    // that one stays until the newer one is old enough (here: the cutoff five seconds before the
    // newer began, and some seconds after the first began, however long the calls take).
    const secondStart = await newestStart();
    retired = await store.retireRows((await serverSecond(db)) - secondStart + 5);
    // (The cut-short row too: its hour's newest derivation is recent.)
    expect(retired.map((r) => r.retired)).toEqual(RETIRED_TABLES.map(() => 0));
    // A second derivation listed in the same second as the newest of the first hour (two nodes
    // that began together): readers may take either, so both stay.
    await db.command(`INSERT INTO rollup_versions (tenant_seq, hour, derived_at, derivation)
      SELECT tenant_seq, hour, derived_at, toUInt64(8) FROM rollup_versions WHERE hour = ${hours[0]} ORDER BY derived_at DESC LIMIT 1`);
    const tiedAt = (await db.query<{ at: string }>(`SELECT toString(max(derived_at)) AS at FROM rollup_versions WHERE hour = ${hours[0]}`))[0]!.at;
    await addSessionRow(db, hours[0]!, 8, tiedAt);
    await waitPast(await newestStart());
    // A derivation under way (begun now, not listed yet).
    await addSessionRow(db, hours[1]!, 9, 'toUInt32(now())');
    const rowsBefore = await Promise.all(RETIRED_TABLES.map((table) => rowsOf(db, table)));

    retired = await store.retireRows(RETIRE_AFTER_SECONDS);
    for (const table of RETIRED_TABLES) await db.waitForMutations(table, 60_000);
    for (const [i, table] of RETIRED_TABLES.entries()) {
      const result = retired.find((r) => r.table === table)!;
      const rows = await rowsOf(db, table);
      if (rowsBefore[i] === 0) continue;
      // Every table held two derivations of each hour: about half of its rows went.
      expect(result.deleting, table).toBe(true);
      expect(rows, table).toBe(rowsBefore[i]! - result.retired);
      const left = await derivationsOf(db, table);
      expect(left.filter((d) => first.includes(d)), table).toEqual([]);
      expect(left.filter((d) => newest.includes(d)).length, table).toBeGreaterThan(0);
    }
    expect(await rowsOf(db, SESSION_HOURS.table, 'derivation = 7')).toBe(0);
    expect(await rowsOf(db, SESSION_HOURS.table, 'derivation = 8')).toBe(1);
    expect(await rowsOf(db, SESSION_HOURS.table, 'derivation = 9')).toBe(1);
    // Nothing a reader uses went: the panels answer as the raw events do (the made-up tie taken
    // out first: its one row is not a whole hour).
    await db.command(`ALTER TABLE rollup_versions DELETE WHERE derivation = 8`);
    await db.waitForMutations('rollup_versions', 60_000);
    for (const filter of filters(8, 1).slice(0, 6)) await expectModel(store, events, filter);
    // Left to retire: that row, of a derivation no longer listed, and the row of the one that was
    // under way, never listed and begun long enough ago by now: two rows, too few to delete yet.
    await waitPast(await newestStart(SESSION_HOURS.table, 'derivation = 9'));
    retired = await store.retireRows(RETIRE_AFTER_SECONDS);
    expect(retired.map((r) => [r.table, r.retired, r.deleting])).toEqual(RETIRED_TABLES.map((table) => [table, table === SESSION_HOURS.table ? 2 : 0, false]));
    await db.close();
  }, 180_000);

  it('never lists a derivation that outlived its claim: the retirement may already be deleting its rows', async () => {
    const db = await ChDatabase.open(server.url, await server.createDatabase());
    await storeWithCopies(db, dataset(9, 1));
    await nextSecond();
    // A short claim, and a derivation that takes longer (held up between its inserts).
    const claimSeconds = 5;
    const slow = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), { ...DERIVE_AT_ONCE, claimSeconds });
    const command = db.command.bind(db);
    db.command = async (...args: Parameters<ChDatabase['command']>) => {
      if (args[0].startsWith('INSERT INTO contest_hours')) await new Promise((resolve) => setTimeout(resolve, claimSeconds * 1000 + 500));
      return command(...args);
    };
    await expect(slow.deriveHours()).rejects.toThrow(/outlived its 5-s claim/);
    db.command = command;
    expect(await rowsOf(db, 'rollup_versions')).toBe(0);
    expect(await rowsOf(db, SESSION_HOURS.table)).toBeGreaterThan(0);
    // Once that claim has lapsed, a derivation within its own claim lists the hours.
    await new Promise((resolve) => setTimeout(resolve, claimSeconds * 1000));
    expect(await slow.deriveHours()).toBeGreaterThan(0);
    expect(await rowsOf(db, 'rollup_versions')).toBeGreaterThan(0);
    await db.close();
  }, 60_000);

  it('looks for rows to retire as it compacts, once every interval', async () => {
    const db = await ChDatabase.open(server.url, await server.createDatabase());
    const clock = new ManualClock(Date.now());
    const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf() }), { ...DERIVE_AT_ONCE, clock });
    const looks: string[] = [];
    const query = db.query.bind(db);
    db.query = (async (sql: string, ...rest: unknown[]) => {
      if (sql.includes('countIf(')) looks.push(sql);
      return (query as (...args: unknown[]) => Promise<unknown>)(sql, ...rest);
    }) as ChDatabase['query'];
    await store.compact();
    clock.advance(RETIRE_INTERVAL_MS - 1);
    await store.compact();
    expect(looks).toEqual([]);
    clock.advance(1);
    await store.compact();
    expect(looks).toHaveLength(RETIRED_TABLES.length);
    await store.compact();
    expect(looks).toHaveLength(RETIRED_TABLES.length);
    await db.close();
  }, 60_000);
});
