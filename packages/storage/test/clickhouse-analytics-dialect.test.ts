import { describe, expect, it } from 'vitest';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { ClickHouseAnalyticsStore } from '../src/clickhouse/clickhouse-analytics-store';
import { dataset, filters, pollsOf } from './analytics-dataset';
import { chdbAvailable, chdbConnection } from './chdb-engine';
import { expectModel, expectModelThroughDerivations, nextSecond, pollLookup, storeWithCopies } from './clickhouse-analytics-checks';
import { retiredRowsCondition } from '../src/clickhouse/ch-rollup-retirement';
import { insertEvents } from './clickhouse-events';

/**
 * The dashboard's statements on the current ClickHouse engine (what users run in production),
 * in process through npm chdb: the model comparison of clickhouse-analytics.test.ts, in short.
 */
const available = chdbAvailable();

describe.runIf(available)('dashboard on the current ClickHouse engine (chdb)', () => {
  it('answers every panel as the raw events do, with copies of retried events not merged yet', async () => {
    const db = await ChDatabase.open('http://chdb.invalid', 'default', { connection: chdbConnection() });
    try {
      const events = dataset(2, 1);
      await insertEvents(db, dataset(2, 2));
      await storeWithCopies(db, events);
      const [stored] = await db.query<{ rows: string; ids: string }>('SELECT count() AS rows, uniqExact(event_id) AS ids FROM events WHERE tenant_seq = 1');
      expect(Number(stored!.ids)).toBe(events.length);
      expect(Number(stored!.rows)).toBeGreaterThan(events.length);
      const store = new ClickHouseAnalyticsStore(db, pollLookup({ 1: pollsOf(), 2: pollsOf() }));
      for (const filter of filters(2, 1).slice(0, 10)) await expectModel(store, events, filter);
    } finally {
      await db.close();
    }
  }, 120_000);

  it('answers the same from derived hours, and from events for hours stored into since', async () => {
    const db = await ChDatabase.open('http://chdb.invalid', 'default', { connection: chdbConnection() });
    try {
      const lookup = pollLookup({ 1: pollsOf() });
      const events = dataset(3, 1);
      await expectModelThroughDerivations(db, events, filters(3, 1).slice(0, 8), () => new ClickHouseAnalyticsStore(db, lookup, { quietSeconds: 0, settleSeconds: 1 }));
      // The hours derived again left the rows of their first derivations: retired (at once, here),
      // the answers stay.
      await nextSecond();
      const retired = await new ClickHouseAnalyticsStore(db, lookup).retireRows(0);
      expect(retired.some((r) => r.deleting)).toBe(true);
      // Of every age: none but the newest derivations are left.
      const [left] = await db.query<{ n: string }>(`SELECT count() AS n FROM session_hours WHERE ${retiredRowsCondition(2 ** 32, 0)}`);
      expect(Number(left!.n)).toBe(0);
      const store = new ClickHouseAnalyticsStore(db, lookup);
      for (const filter of filters(3, 1).slice(0, 4)) await expectModel(store, events, filter);
    } finally {
      await db.close();
    }
  }, 180_000);
});
