import { createReadStream, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import type { DuckDbDatabase } from '@svc/storage';

/** Where the copy's columns come from: ClickHouse's `events` columns, in its units (ms since the epoch). */
const COLUMNS = `tenant_seq, event_id::VARCHAR AS event_id, event, user_id, session_id, broadcast_id, campaign_id,
  epoch_ms(ts) AS timestamp_ms, epoch_ms(received_at) AS received_at_ms, country, order_id, sponsor_id, total, items, data`;

/** The columns the copy fills, by name. */
const INSERTED = 'tenant_seq, event_id, event, user_id, session_id, broadcast_id, campaign_id, timestamp_ms, received_at_ms, country, order_id, sponsor_id, total, items, data';

/**
 * Copies one tenant's events from an embedded database (generated there by
 * bench/dashboard-data.ts) into ClickHouse's `events` of `database`: DuckDB writes them to a
 * newline-delimited JSON file in its insertion (time) order, and the file is streamed to
 * ClickHouse's HTTP interface as one `INSERT … FORMAT JSONEachRow`, which the server cuts into
 * parts of about a million rows. Neither side holds the rows in Node's memory, so 10 million
 * take minutes, not tens of minutes. Returns the rows copied, the file's size and the seconds it took.
 */
export async function copyEventsToClickHouse(duck: DuckDbDatabase, tenantSeq: number, clickhouseUrl: string, database: string, folder: string): Promise<{ rows: number; bytes: number; seconds: number }> {
  if (!Number.isInteger(tenantSeq)) throw new Error(`not a tenant seq: ${tenantSeq}`);
  if (!/^\w+$/.test(database)) throw new Error(`not a database name: ${database}`);
  const t0 = performance.now();
  const file = join(folder, 'events-copy.ndjson');
  try {
    // COPY takes no bound parameters; the two values pasted are checked above (an integer, a path of our own folder).
    await duck.write((connection) => connection.run(`COPY (SELECT ${COLUMNS} FROM events WHERE tenant_seq = ${tenantSeq}) TO '${file.replace(/'/g, "''")}' (FORMAT JSON)`));
    const bytes = statSync(file).size;
    // The columns named: ClickHouse fills the fields of `data` (their DEFAULT), as it does for events stored before they were columns.
    const query = new URLSearchParams({ database, query: `INSERT INTO events (${INSERTED}) FORMAT JSONEachRow` });
    const response = await request(`${clickhouseUrl}/?${query}`, { method: 'POST', body: createReadStream(file), headersTimeout: 0, bodyTimeout: 0 });
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`ClickHouse refused the copy (${response.statusCode}): ${text.slice(0, 500)}`);
    const [count] = await duck.query('SELECT count(*) AS n FROM events WHERE tenant_seq = $1', [tenantSeq]);
    return { rows: Number(count!.n), bytes, seconds: (performance.now() - t0) / 1000 };
  } finally {
    rmSync(file, { force: true });
  }
}
