// A writer in a process of its own, to be killed: `node --import tsx writer-process.ts <nats url> <duckdb folder>`.
// It stores each batch in DuckDB, prints `stored <n>` and then hangs before the ack (its
// deliveries are never enqueued), as a writer does that is killed between insert and ack.
import { connectNats, DuckDbDatabase, DuckDbEventStore, EventLog, EventLogWriter, type CommitBatch, type EventStore } from '../src';

const [natsUrl, dataDir] = process.argv.slice(2) as [string, string];
const events = new DuckDbEventStore(await DuckDbDatabase.open(dataDir));
const sink = {
  async commit(batch: CommitBatch) {
    const outcome = await events.commit(batch);
    process.stdout.write(`stored ${batch.events.length}\n`);
    return outcome;
  },
} as EventStore;
const log = await EventLog.open(await connectNats(natsUrl));
const writer = new EventLogWriter(log, { sink, enqueueDeliveries: () => new Promise<void>(() => {}), ackWaitMs: 2_000 });
await writer.start();
process.stdout.write('started\n');
