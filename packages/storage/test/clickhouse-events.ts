import type { ChDatabase } from '../src/clickhouse/ch-database';
import { DATA_FIELD_COLUMNS } from '../src/clickhouse/data-fields';
import { toInsertRow } from '../src/clickhouse/event-sql';
import type { EventRow } from '../src/records';

/**
 * Inserts events into ClickHouse's `events` table as they are, in one insert (one part), ids
 * already stored or not: how tests put copies of an event beside it, as a retried batch can.
 */
export async function insertEvents(db: ChDatabase, events: EventRow[]): Promise<void> {
  await db.insert('events', events.map(toInsertRow));
}

/**
 * Inserts events as releases before migration 5 wrote them: without the columns of `data`'s
 * fields (into a table without them, or leaving them to their DEFAULT).
 */
export async function insertEarlierEvents(db: ChDatabase, events: EventRow[]): Promise<void> {
  const columns = new Set<string>(DATA_FIELD_COLUMNS.map(([column]) => column));
  const rows = events.map((event) => Object.fromEntries(Object.entries(toInsertRow(event)).filter(([name]) => !columns.has(name))));
  const names = Object.keys(rows[0] ?? {});
  // The columns named: those left out take their DEFAULT (JSONEachRow alone would write '').
  await db.command(`INSERT INTO events (${names.join(', ')}) FORMAT JSONEachRow\n${rows.map((row) => JSON.stringify(row)).join('\n')}`);
}
