import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { DeletionJobStore } from '../deletion-job-store';
import { WRITER_RETRY_DELAY_MS, type WriterBatchReport } from './event-log-writer';
import { deserializeError, serializeError, type FromWriterThread, type ToWriterThread, type WriterThreadSettings } from './writer-thread-messages';

/** Longest `stop` waits for the thread to finish its batch before it ends it. */
export const WRITER_THREAD_STOP_MS = 60_000;

export interface EventLogWriterThreadOptions extends WriterThreadSettings {
  /** The deletion jobs, asked by the thread at most once a second (see UnfinishedErasures). */
  jobs: Pick<DeletionJobStore, 'listUnfinished'>;
  /** Called with the tenants some of whose events an insert of the thread stored. */
  onStored?: (tenantSeqs: number[]) => void;
  /** Called with each batch the thread's writer wrote (rows and insert time). */
  onBatch?: (batch: WriterBatchReport) => void;
  /** A failed batch or fetch in the thread, or the thread's end. */
  onError: (error: unknown) => void;
}

/**
 * The node's EventLogWriter in a worker thread of its own, with its own NATS connection and
 * ClickHouse client: a node saturated with ingest reads the stream on its main thread only
 * between requests (one socket read per turn of its event loop), so its writer fell behind the
 * events it acknowledged (docs/benchmarks.md). The thread writes and enqueues deliveries as the
 * writer does in process; the node's thread answers its questions for the unfinished deletion
 * jobs and hears which tenants' events it stored (`onStored`).
 */
export class EventLogWriterThread {
  private worker: Worker | null = null;
  private stopping = false;

  constructor(private readonly options: EventLogWriterThreadOptions) {}

  /**
   * Starts the thread; rejects (and ends it) when it could not start its writer. A `stop` meanwhile
   * ends the starting thread, and this resolves without one.
   */
  async start(): Promise<void> {
    if (this.stopping) return;
    const { jobs, onStored, onBatch, onError, ...settings } = this.options;
    const worker = new Worker(new URL('./writer-thread-boot.mjs', import.meta.url), { workerData: settings });
    // Known to `stop` from now on, which ends it even before it has started.
    this.worker = worker;
    const send = (message: ToWriterThread) => worker.postMessage(message);
    const started = new Promise<void>((resolve, reject) => {
      worker.on('message', (message: FromWriterThread) => {
        if (message.kind === 'started') resolve();
        else if (message.kind === 'failed') reject(deserializeError(message.error));
        else if (message.kind === 'error') onError(deserializeError(message.error));
        else if (message.kind === 'stored') onStored?.(message.tenantSeqs);
        else if (message.kind === 'batch') onBatch?.({ rows: message.rows, insertMs: message.insertMs });
        else if (message.kind === 'list-unfinished') {
          jobs.listUnfinished().then(
            (list) => send({ kind: 'unfinished', id: message.id, jobs: list }),
            // Not an empty list: the thread would store the rows of a user being erased. The batch fails and comes again.
            (error: unknown) => send({ kind: 'unfinished', id: message.id, error: serializeError(error) }),
          );
        }
      });
      worker.on('error', reject);
      worker.on('exit', (code) => reject(new Error(`The event writer thread ended (exit code ${code}) before it started.`)));
    });
    try {
      await started;
    } catch (error) {
      if (this.worker === worker) this.worker = null;
      await worker.terminate();
      if (this.stopping) return;
      throw error;
    }
    // Stopped while it started: `stop` ends it; no restart when it exits.
    if (this.stopping) return;
    worker.on('error', (error) => onError(new Error('The event writer thread failed.', { cause: error })));
    worker.on('exit', (code) => {
      if (this.stopping) return;
      onError(new Error(`The event writer thread ended (exit code ${code}); it is started again.`));
      this.worker = null;
      // Until it starts (ClickHouse or NATS may be down meanwhile) or the writer is stopped.
      const restart = () =>
        setTimeout(() => {
          if (!this.stopping) this.start().catch((error: unknown) => (onError(error), restart()));
        }, settings.timing.retryDelayMs ?? WRITER_RETRY_DELAY_MS).unref();
      restart();
    });
  }

  /** Stops fetching, lets the thread finish the batch in hand, and ends it. */
  async stop(): Promise<void> {
    // Also keeps a thread that ended from being started again.
    this.stopping = true;
    const worker = this.worker;
    if (!worker) return;
    this.worker = null;
    const stopped = new Promise<void>((resolve) => worker.on('message', (message: FromWriterThread) => message.kind === 'stopped' && resolve()));
    const exited = once(worker, 'exit');
    worker.postMessage({ kind: 'stop' } satisfies ToWriterThread);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([stopped, exited, new Promise((resolve) => (timer = setTimeout(resolve, WRITER_THREAD_STOP_MS)))]);
    clearTimeout(timer);
    await worker.terminate();
  }
}
