import { uuidv7 } from 'uuidv7';
import { ChDatabase, dataFieldValues } from '@svc/storage';

/** Rows per insert while the table is filled: each insert is one part. */
const PART_ROWS = 50_000;
/** Every COPY_EVERY-th event is inserted a second time, in parts of its own, and left unmerged. */
const COPY_EVERY = 10;

const COLUMNS = `toString(event_id) AS event_id, event, user_id, session_id, broadcast_id, campaign_id,
  timestamp_ms, received_at_ms, country, order_id, sponsor_id, total, items, data`;
const ORDER = 'timestamp_ms, toString(event_id)';
const WHERE = 'tenant_seq = 1';

/** The ways of reading the tenant's events (and counting them) with copies unmerged. */
const COUNTS: Record<string, string> = {
  'FINAL (as the store counts)': `SELECT count() AS n FROM events FINAL WHERE ${WHERE}`,
  'LIMIT 1 BY': `SELECT count() AS n FROM (SELECT 1 FROM events WHERE ${WHERE} LIMIT 1 BY timestamp_ms, event_id)`,
  'GROUP BY (argMax)': `SELECT count() AS n FROM (SELECT event_id FROM events WHERE ${WHERE} GROUP BY timestamp_ms, event_id)`,
  'uniqExact(event_id)': `SELECT uniqExact(event_id) AS n FROM events WHERE ${WHERE}`,
  'plain count (copies counted: wrong)': `SELECT count() AS n FROM events WHERE ${WHERE}`,
};
const ARGMAX_COLUMNS = `toString(event_id) AS event_id, timestamp_ms, ${['event', 'user_id', 'session_id', 'broadcast_id', 'campaign_id', 'country', 'order_id', 'sponsor_id', 'total', 'items', 'data']
  .map((column) => `argMax(${column}, received_at_ms) AS last_${column}`)
  .join(', ')}, max(received_at_ms) AS last_received_at_ms`;
const EXPORTS: Record<string, string> = {
  'ordered read, copies skipped in Node (as the store exports)': `SELECT ${COLUMNS} FROM events WHERE ${WHERE} ORDER BY ${ORDER}`,
  FINAL: `SELECT ${COLUMNS} FROM events FINAL WHERE ${WHERE} ORDER BY ${ORDER}`,
  'LIMIT 1 BY': `SELECT ${COLUMNS} FROM events WHERE ${WHERE} ORDER BY ${ORDER} LIMIT 1 BY timestamp_ms, event_id`,
  'GROUP BY with argMax': `SELECT ${ARGMAX_COLUMNS} FROM events WHERE ${WHERE} GROUP BY timestamp_ms, event_id ORDER BY ${ORDER}`,
};

export interface ReadTiming {
  name: string;
  kind: 'count' | 'export';
  medianMs: number;
  /** Events the read gave (after skipping adjacent copies, for the store's export). */
  events: number;
}

export interface ClusterReadsResult {
  rows: number;
  copies: number;
  timings: ReadTiming[];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Export and count reads on ClickHouse with copies of retried events unmerged: `events` rows
 * of one tenant in parts of PART_ROWS, then every COPY_EVERY-th again in parts of its own, merges
 * stopped. Each way runs `runs` times, taking turns; the median is reported.
 */
export async function clusterReads(clickhouseUrl: string, events: number, runs: number, log: (line: string) => void): Promise<ClusterReadsResult> {
  const db = await ChDatabase.open(clickhouseUrl, `svc_bench_reads_${Date.now()}`);
  try {
    await db.command('SYSTEM STOP MERGES events');
    const nowMs = Date.now();
    const all: Record<string, unknown>[] = [];
    for (let i = 0; i < events; i++) {
      const data = `{"pollId":"p${i % 20}","questionText":"Who wins?","optionSelected":"${'ABCD'[i % 4]}","optionIndex":${i % 4}}`;
      all.push({
        tenant_seq: 1,
        event_id: uuidv7(),
        event: i % 10 === 0 ? 'poll.viewed' : 'poll.voted',
        user_id: `user-${i % 50_000}`,
        session_id: `svc_01JBENCH${(i % 50_000).toString(36).padStart(6, '0')}`,
        broadcast_id: `b-${(i % 4) + 1}`,
        campaign_id: 0,
        timestamp_ms: nowMs - 30 * 86_400_000 + Math.floor((i / events) * 30 * 86_400_000),
        received_at_ms: nowMs,
        country: 'DE',
        order_id: null,
        sponsor_id: null,
        total: null,
        items: null,
        data,
        // The fields of `data` a node writes beside it.
        ...dataFieldValues(data),
      });
    }
    log(`reads: inserting ${events.toLocaleString('en-US')} events and ${Math.floor(events / COPY_EVERY).toLocaleString('en-US')} copies, merges stopped…`);
    for (let i = 0; i < all.length; i += PART_ROWS) await db.insert('events', all.slice(i, i + PART_ROWS));
    const copies = all.filter((_, i) => i % COPY_EVERY === 0).map((row) => ({ ...row, received_at_ms: nowMs + 1 }));
    for (let i = 0; i < copies.length; i += PART_ROWS) await db.insert('events', copies.slice(i, i + PART_ROWS));

    const samples = new Map<string, { kind: 'count' | 'export'; ms: number[]; events: number }>();
    for (let run = 0; run < runs; run++) {
      log(`reads: run ${run + 1}/${runs}`);
      for (const [name, sql] of Object.entries(COUNTS)) {
        const start = performance.now();
        const [row] = await db.query<{ n: string }>(sql);
        const entry = samples.get(`count ${name}`) ?? { kind: 'count' as const, ms: [], events: 0 };
        entry.ms.push(performance.now() - start);
        entry.events = Number(row?.n ?? 0);
        samples.set(`count ${name}`, entry);
      }
      for (const [name, sql] of Object.entries(EXPORTS)) {
        const start = performance.now();
        let count = 0;
        let previous = '';
        for await (const chunk of db.stream<{ event_id: string; timestamp_ms: string }>(sql)) {
          for (const row of chunk) {
            const key = `${row.timestamp_ms}:${row.event_id}`;
            if (key !== previous) count++;
            previous = key;
          }
        }
        const entry = samples.get(`export ${name}`) ?? { kind: 'export' as const, ms: [], events: 0 };
        entry.ms.push(performance.now() - start);
        entry.events = count;
        samples.set(`export ${name}`, entry);
      }
    }
    const timings = [...samples].map(([key, s]) => ({ name: key.slice(key.indexOf(' ') + 1), kind: s.kind, medianMs: median(s.ms), events: s.events }));
    return { rows: events, copies: copies.length, timings };
  } finally {
    await db.command(`DROP DATABASE IF EXISTS ${db.name}`).catch(() => undefined);
    await db.close();
  }
}
