import { SvcError } from '@svc/protocol';
import type { DeletionJob, ErasedCounts } from '../deletion-job-store';
import { STORAGE_RETRY_AFTER_SECONDS } from '../duckdb/duckdb-database';
import type { UserErasureStore } from '../user-erasure-store';
import type { EventLog } from './event-log';

/** Longest an erasure waits for the writer before it gives up for now (`storage_unavailable`, tried again later). */
export const ERASURE_WRITER_WAIT_MS = 60_000;

/**
 * Erasure across the pipeline: events of the user that are still in the stream EVENTS when
 * the erasure starts must not reach the sink after it. So `erase` reads the stream's position,
 * waits until the writer has passed it (each of those messages stored or dropped, and
 * acknowledged), and only then erases in the sink (ClickHouse's `ALTER TABLE … DELETE`).
 * While the writer is behind (the sink down), the erasure fails with `storage_unavailable`
 * after `maxWaitMs`, and the deletion job is tried again later.
 */
export class PipelineErasureStore implements UserErasureStore {
  constructor(
    private readonly log: EventLog,
    private readonly sink: UserErasureStore,
    /** Default ERASURE_WRITER_WAIT_MS. */
    private readonly maxWaitMs = ERASURE_WRITER_WAIT_MS,
  ) {}

  async erase(job: Pick<DeletionJob, 'tenantSeq' | 'userHash'>, userId?: string): Promise<ErasedCounts> {
    const position = await this.log.position();
    try {
      await this.log.waitUntilPassed(position, AbortSignal.timeout(this.maxWaitMs));
    } catch (error) {
      if (error instanceof SvcError) throw error;
      throw new SvcError('storage_unavailable', `The event writer has not stored the events received before this erasure within ${this.maxWaitMs} ms; it is tried again later.`, {
        cause: error,
        headers: { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
      });
    }
    return this.sink.erase(job, userId);
  }

  rewriteErased(): Promise<void> {
    return this.sink.rewriteErased();
  }
}
