import { uuidv7 } from 'uuidv7';
import { ChDatabase, ClickHouseEventStore, connectNats, EventLog, EventLogWriter, JetStreamEventStore, type EventRow } from '@svc/storage';
import { startNats } from '../packages/storage/test/nats-server';
import { childPids, totalCpuSeconds } from './engine-cpu';

/** Events per commit while the stream is filled: one request's batch, which a node publishes as one message. */
const FILL_COMMIT_EVENTS = 100;
/** Commits in flight while the stream is filled (the ingest benchmark's connection count). */
const FILL_IN_FLIGHT = 64;

export interface WriterDrainResult {
  rows: number;
  seconds: number;
  /** CPU seconds of the writer (this process) and of ClickHouse during the drain. */
  writerCpuSeconds: number;
  clickhouseCpuSeconds: number;
  fillSeconds: number;
}

/** A poll.voted row as ingest stores it. */
function voteRow(i: number, nowMs: number): EventRow {
  const user = i % 50_000;
  return {
    tenantSeq: 1,
    eventId: uuidv7(),
    event: 'poll.voted',
    userId: `user-${user}`,
    sessionId: `svc_01JBENCH${user.toString(36).padStart(6, '0')}`,
    broadcastId: `b-${(i % 4) + 1}`,
    campaignId: 0,
    timestampMs: nowMs - (i % 1000),
    receivedAtMs: nowMs,
    country: 'DE',
    orderId: null,
    sponsorId: null,
    total: null,
    items: null,
    data: `{"pollId":"p${i % 20}","questionText":"Who wins?","optionSelected":"${'ABCD'[i % 4]}","optionIndex":${i % 4}}`,
  };
}

/**
 * The writer alone: a stream EVENTS on a NATS server of its own filled with `rows` events
 * (through JetStreamEventStore, as nodes publish them), then one EventLogWriter in this process
 * moving them into a fresh ClickHouse database; timed from its start to the last row counted
 * in ClickHouse.
 */
export async function writerDrain(clickhouseUrl: string, rows: number, log: (line: string) => void): Promise<WriterDrainResult> {
  const nats = await startNats();
  const connection = await connectNats(nats.url);
  const db = await ChDatabase.open(clickhouseUrl, `svc_bench_writer_${Date.now()}`);
  try {
    const eventLog = await EventLog.open(connection, { replicas: 1 });
    const sink = new ClickHouseEventStore(db);
    const store = new JetStreamEventStore(eventLog, sink);
    log(`writer: filling the stream with ${rows.toLocaleString('en-US')} events…`);
    const fillStart = performance.now();
    const nowMs = Date.now();
    let next = 0;
    const fill = async () => {
      while (next < rows) {
        const from = next;
        next = Math.min(rows, next + FILL_COMMIT_EVENTS);
        await store.commit({ events: Array.from({ length: next - from }, (_, k) => voteRow(from + k, nowMs)), rejects: [] });
      }
    };
    await Promise.all(Array.from({ length: FILL_IN_FLIGHT }, fill));
    const fillSeconds = (performance.now() - fillStart) / 1000;
    const clickhouse = childPids('clickhouse-serv');
    log(`writer: filled in ${fillSeconds.toFixed(1)} s; draining into ClickHouse…`);
    const writer = new EventLogWriter(eventLog, { sink, enqueueDeliveries: async () => {}, onError: (error) => log(`writer error: ${String(error)}`) });
    const cpu0 = process.cpuUsage();
    const ch0 = totalCpuSeconds(clickhouse);
    const start = performance.now();
    await writer.start();
    let stored = 0;
    const deadline = start + 600_000;
    while (stored < rows && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const [row] = await db.query<{ n: string }>('SELECT count() AS n FROM events');
      stored = Number(row?.n ?? 0);
    }
    const seconds = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const clickhouseCpuSeconds = totalCpuSeconds(clickhouse) - ch0;
    await writer.stop();
    if (stored < rows) throw new Error(`the writer stored ${stored} of ${rows} events in 600 s`);
    return { rows: stored, seconds, writerCpuSeconds: (cpu.user + cpu.system) / 1e6, clickhouseCpuSeconds, fillSeconds };
  } finally {
    await connection.close().catch(() => undefined);
    await db.command(`DROP DATABASE IF EXISTS ${db.name}`).catch(() => undefined);
    await db.close();
    await nats.stop();
  }
}
