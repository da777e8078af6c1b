import { parentPort, workerData } from 'node:worker_threads';
import { SvcError } from '@svc/protocol';
import type { DeletionJob } from '../deletion-job-store';
import { ChDatabase } from '../clickhouse/ch-database';
import { ClickHouseEventStore } from '../clickhouse/clickhouse-event-store';
import { DeliveryQueue } from './delivery-queue';
import { EventLog } from './event-log';
import { EventLogWriter } from './event-log-writer';
import { connectNats } from './nats-connection';
import { UnfinishedErasures } from './unfinished-erasures';
import {
  deserializeError,
  serializeError,
  WRITER_THREAD_JOBS_TIMEOUT_MS,
  type FromWriterThread,
  type ToWriterThread,
  type WriterThreadSettings,
} from './writer-thread-messages';

/**
 * The event writer in a worker thread (see writer-thread.ts): its own NATS connection and
 * ClickHouse client; the unfinished deletion jobs are asked from the node's thread.
 */
const port = parentPort!;
const settings = workerData as WriterThreadSettings;
const send = (message: FromWriterThread) => port.postMessage(message);

/** Set once the node's thread asked the thread to stop. */
let stopping = false;
let asked = 0;
const answers = new Map<number, { resolve: (jobs: DeletionJob[]) => void; reject: (error: Error) => void }>();
const jobsTimeoutMs = settings.jobsTimeoutMs ?? WRITER_THREAD_JOBS_TIMEOUT_MS;
/** The node's unfinished deletion jobs; rejects when it could not read them or did not answer in time. */
const listUnfinished = () =>
  new Promise<DeletionJob[]>((resolve, reject) => {
    const id = ++asked;
    const timer = setTimeout(() => {
      answers.delete(id);
      reject(new SvcError('storage_unavailable', `The unfinished deletion jobs were not read within ${jobsTimeoutMs} ms.`));
    }, jobsTimeoutMs);
    const settle = () => (clearTimeout(timer), answers.delete(id));
    answers.set(id, { resolve: (jobs) => (settle(), resolve(jobs)), reject: (error) => (settle(), reject(error)) });
    send({ kind: 'list-unfinished', id });
  });

async function run(): Promise<() => Promise<void>> {
  const closing: Array<() => Promise<unknown>> = [];
  const close = async () => {
    for (const step of closing.reverse()) await step().catch(() => undefined);
  };
  try {
    const nats = await connectNats(settings.natsServers, { name: settings.nodeId ? `${settings.nodeId}-writer` : undefined });
    closing.push(() => nats.close());
    const db = await ChDatabase.open(settings.clickhouseServerUrl, settings.database);
    closing.push(() => db.close());
    const log = await EventLog.open(nats, { replicas: settings.natsReplicas });
    const queue = await DeliveryQueue.open(nats, { replicas: settings.natsReplicas, ackWaitMs: settings.webhookAckWaitMs });
    const writer = new EventLogWriter(log, {
      ...settings.timing,
      sink: new ClickHouseEventStore(db),
      enqueueDeliveries: (deliveries) => queue.enqueue(deliveries),
      erasingSince: new UnfinishedErasures({ listUnfinished }).since,
      onStored: (keys) => send({ kind: 'stored', tenantSeqs: [...new Set(keys.map((key) => key.tenantSeq))] }),
      onError: (error) => send({ kind: 'error', error: serializeError(error) }),
      onBatch: ({ rows, insertMs }) => send({ kind: 'batch', rows, insertMs }),
    });
    await writer.start();
    closing.push(() => writer.stop());
    // A writer that ended by itself (its connection closed, or it failed) leaves a thread that
    // writes nothing yet stays alive (the port keeps it): the thread ends instead, and the
    // node's thread starts it again.
    void writer.ended.then(async () => {
      if (stopping) return;
      const why = nats.isClosed() ? 'its NATS connection closed' : 'it failed';
      send({ kind: 'error', error: serializeError(new Error(`The event writer ended by itself (${why}); its thread ends.`)) });
      await close();
      process.exit(1);
    });
    return close;
  } catch (error) {
    await close();
    throw error;
  }
}

const running = run();
running.then(
  () => send({ kind: 'started' }),
  (error: unknown) => send({ kind: 'failed', error: serializeError(error) }),
);
port.on('message', (message: ToWriterThread) => {
  if (message.kind === 'unfinished') {
    if ('error' in message) answers.get(message.id)?.reject(deserializeError(message.error));
    else answers.get(message.id)?.resolve(message.jobs);
  } else if (message.kind === 'stop') {
    stopping = true;
    void running
      .then((close) => close(), () => undefined)
      .then(() => {
        send({ kind: 'stopped' });
        port.close();
      });
  }
});
