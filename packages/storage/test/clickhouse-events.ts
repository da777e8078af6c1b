import type { ChDatabase } from '../src/clickhouse/ch-database';
import { toInsertRow } from '../src/clickhouse/event-sql';
import type { EventRow } from '../src/records';

/**
 * Inserts events into ClickHouse's `events` table as they are, in one insert (one part), ids
 * already stored or not: how tests put copies of an event beside it, as a retried batch can.
 */
export async function insertEvents(db: ChDatabase, events: EventRow[]): Promise<void> {
  await db.insert('events', events.map(toInsertRow));
}
