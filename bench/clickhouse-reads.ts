/**
 * The ClickHouse event store against a throwaway ClickHouse server (Debian's 18.16):
 * commit rows/s (the writer's sink), and how reads that must be correct with unmerged copies
 * of events are fastest (FINAL, LIMIT 1 BY, uniqExact, or skipping the copies in Node).
 *
 *   npx tsx bench/clickhouse-reads.ts [--rows 1000000] [--copies-percent 10]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { ChDatabase } from '../packages/storage/src/clickhouse/ch-database';
import { ClickHouseEventStore } from '../packages/storage/src/clickhouse/clickhouse-event-store';
import type { EventRow } from '../packages/storage/src';
import { startClickHouse } from '../packages/storage/test/clickhouse-server';

const { values } = parseArgs({ options: { rows: { type: 'string', default: '1000000' }, 'copies-percent': { type: 'string', default: '10' } } });
const ROWS = Number(values.rows);
const COPIES_PERCENT = Number(values['copies-percent']);
const COMMIT_BATCH_ROWS = 50_000;
const T0_MS = Date.UTC(2026, 0, 1);

const server = await startClickHouse();
try {
  const db = await ChDatabase.open(server.url, 'bench');
  const store = new ClickHouseEventStore(db);

  // Commit: batches as the writer passes them (ten tenants, a second of events each).
  let committed = 0;
  let commitMs = 0;
  for (let batch = 0; batch < 4; batch++) {
    const events: EventRow[] = Array.from({ length: COMMIT_BATCH_ROWS }, (_, i) => ({
      tenantSeq: 100 + (i % 10), eventId: randomUUID(), event: 'poll.voted', userId: `u${i % 1000}`, sessionId: 'svc_s', broadcastId: 'b1',
      campaignId: 1, timestampMs: T0_MS + batch * 1_000 + (i % 1_000), receivedAtMs: T0_MS, country: 'DE', orderId: null, sponsorId: null,
      total: null, items: null, data: '{"pollId":"p1","optionIndex":1}',
    }));
    const started = performance.now();
    committed += (await store.commit({ events, rejects: [] })).inserted.size;
    commitMs += performance.now() - started;
  }
  console.log(`commit: ${committed} rows in batches of ${COMMIT_BATCH_ROWS}: ${Math.round((committed / commitMs) * 1000)} rows/s`);

  // Reads: one tenant of ROWS events a second apart, COPIES_PERCENT of them stored twice (another part).
  await db.command(`INSERT INTO events (tenant_seq, event_id, event, user_id, session_id, broadcast_id, campaign_id, timestamp_ms, received_at_ms,
    country, order_id, sponsor_id, total, items, data) SELECT 1, generateUUIDv4(), 'poll.voted', concat('u', toString(number % 1000)), 's', 'b1', 1,
    ${T0_MS} + number * 1000, ${T0_MS} + number * 1000, 'DE', NULL, NULL, NULL, NULL, '{"pollId":"p1","optionIndex":1}' FROM numbers(${ROWS})`);
  await db.command(`INSERT INTO events SELECT * FROM events WHERE tenant_seq = 1 AND cityHash64(toString(event_id)) % 100 < ${COPIES_PERCENT}`);
  const best = async (label: string, run: () => Promise<unknown>) => {
    const times: number[] = [];
    let result: unknown;
    for (let i = 0; i < 2; i++) {
      const started = performance.now();
      result = await run();
      times.push(performance.now() - started);
    }
    console.log(`${label.padEnd(48)} ${Math.min(...times).toFixed(0).padStart(6)} ms  ${JSON.stringify(result)}`);
  };
  const count = async (sql: string) => (await db.query<{ n: string }>(sql))[0]?.n;
  await best('count: FINAL', () => count('SELECT count() AS n FROM events FINAL WHERE tenant_seq = 1'));
  await best('count: uniqExact(toString(event_id))', () => count('SELECT uniqExact(toString(event_id)) AS n FROM events WHERE tenant_seq = 1'));
  await best('count: GROUP BY time, id', () => count('SELECT count() AS n FROM (SELECT 1 FROM events WHERE tenant_seq = 1 GROUP BY timestamp_ms, toString(event_id))'));
  const columns = 'toString(event_id) AS event_id, event, user_id, session_id, broadcast_id, campaign_id, timestamp_ms, received_at_ms, country, order_id, sponsor_id, total, items, data';
  const read = async (sql: string, skipCopies: boolean) => {
    let rows = 0;
    let previous = '';
    for await (const chunk of db.stream<{ timestamp_ms: string; event_id: string }>(sql)) {
      for (const row of chunk) {
        const key = `${row.timestamp_ms}:${row.event_id}`;
        if (skipCopies && key === previous) continue;
        previous = key;
        rows++;
      }
    }
    return rows;
  };
  const order = 'ORDER BY timestamp_ms, toString(event_id)';
  // Alternated, so that neither gains from the other's warm cache or a quieter moment.
  for (let round = 0; round < 2; round++) {
    await best('export read: FINAL', () => read(`SELECT ${columns} FROM events FINAL WHERE tenant_seq = 1 ${order}`, false));
    await best('export read: copies skipped in Node', () => read(`SELECT ${columns} FROM events WHERE tenant_seq = 1 ${order}`, true));
  }
  const middle = T0_MS + (ROWS / 2) * 1000;
  await best('page of 100: LIMIT 1 BY', () => read(`SELECT ${columns} FROM events WHERE tenant_seq = 1 AND timestamp_ms > ${middle} ${order} LIMIT 1 BY timestamp_ms, event_id LIMIT 100`, false));
  await best('page of 100: FINAL', () => read(`SELECT ${columns} FROM events FINAL WHERE tenant_seq = 1 AND timestamp_ms > ${middle} ${order} LIMIT 100`, false));
  await db.close();
} finally {
  await server.stop();
}
