import type { ChDatabase, DuckDbDatabase } from '@svc/storage';

/** Rows per insert: each insert makes one part on the server, as a writer batch does. */
const PART_ROWS = 100_000;

/**
 * Copies one tenant's events from an embedded database (generated there by
 * bench/dashboard-data.ts) into ClickHouse's `events`, in time order, a time window of about
 * PART_ROWS rows per insert, the next window read while the last one is inserted. The whole
 * table is never held in memory (10 million rows would not fit comfortably). Returns the rows
 * copied and the seconds it took.
 */
export async function copyEventsToClickHouse(duck: DuckDbDatabase, ch: ChDatabase, tenantSeq: number): Promise<{ rows: number; seconds: number }> {
  const t0 = performance.now();
  const [range] = await duck.query(
    'SELECT count(*) AS n, min(epoch_ms(ts)) AS first_ms, max(epoch_ms(ts)) AS last_ms FROM events WHERE tenant_seq = $1',
    [tenantSeq],
  );
  const total = Number(range!.n);
  const firstMs = Number(range!.first_ms);
  const lastMs = Number(range!.last_ms);
  const windows = Math.max(1, Math.ceil(total / PART_ROWS));
  const widthMs = Math.ceil((lastMs - firstMs + 1) / windows);
  const read = (k: number) =>
    duck
      .query(
        `SELECT tenant_seq, event_id::VARCHAR AS event_id, event, user_id, session_id, broadcast_id, campaign_id, epoch_ms(ts) AS timestamp_ms,
                epoch_ms(received_at) AS received_at_ms, country, order_id, sponsor_id, total, items, data
         FROM events WHERE tenant_seq = $1 AND epoch_ms(ts) >= $2 AND epoch_ms(ts) < $3 ORDER BY ts`,
        [tenantSeq, firstMs + k * widthMs, firstMs + (k + 1) * widthMs],
      )
      .then((rows) => rows.map((row) => ({ ...row, campaign_id: Number(row.campaign_id), timestamp_ms: Number(row.timestamp_ms), received_at_ms: Number(row.received_at_ms) })));
  let copied = 0;
  let next = read(0);
  for (let k = 0; k < windows; k++) {
    const rows = await next;
    if (k + 1 < windows) next = read(k + 1);
    if (rows.length > 0) await ch.insert('events', rows);
    copied += rows.length;
  }
  if (copied !== total) throw new Error(`copied ${copied} of ${total} events to ClickHouse`);
  return { rows: copied, seconds: (performance.now() - t0) / 1000 };
}
