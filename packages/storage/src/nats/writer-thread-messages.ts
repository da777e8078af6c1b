import { SvcError, type ErrorCode } from '@svc/protocol';
import type { DeletionJob } from '../deletion-job-store';
import type { EventLogWriterOptions, WriterBatchReport } from './event-log-writer';

/** What the writer thread is started with (structured-clone data only). */
export interface WriterThreadSettings {
  natsServers: string;
  nodeId?: string;
  natsReplicas: number;
  webhookAckWaitMs?: number;
  clickhouseServerUrl: string;
  database: string;
  timing: Pick<EventLogWriterOptions, 'ackWaitMs' | 'retryDelayMs' | 'batchWaitMs'>;
  /** Default WRITER_THREAD_JOBS_TIMEOUT_MS. */
  jobsTimeoutMs?: number;
}

/**
 * Longest the thread waits for the node's thread to answer its question for the unfinished
 * deletion jobs: a batch whose answer does not come fails and is given back, so that a hung
 * database does not stall the writer while it keeps its messages from the other writers.
 */
export const WRITER_THREAD_JOBS_TIMEOUT_MS = 10_000;

/** An error as it crosses between threads. */
export interface SerializedError {
  name: string;
  message: string;
  code?: string;
  stack?: string;
}

export type FromWriterThread =
  | { kind: 'started' }
  | { kind: 'failed'; error: SerializedError }
  | { kind: 'error'; error: SerializedError }
  | { kind: 'list-unfinished'; id: number }
  /** Tenants some of whose events the last insert stored. */
  | { kind: 'stored'; tenantSeqs: number[] }
  /** A batch the writer wrote (rows and insert time), observed by the node's thread for /metrics. */
  | ({ kind: 'batch' } & WriterBatchReport)
  | { kind: 'stopped' };

export type ToWriterThread =
  | { kind: 'unfinished'; id: number; jobs: DeletionJob[] }
  /** The unfinished deletion jobs could not be read: the batch that asked fails. */
  | { kind: 'unfinished'; id: number; error: SerializedError }
  | { kind: 'stop' };

export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const code = (error as { code?: unknown }).code;
  const cause = error.cause instanceof Error ? ` (cause: ${error.cause.message})` : '';
  return { name: error.name, message: `${error.message}${cause}`, code: typeof code === 'string' ? code : undefined, stack: error.stack };
}

/** The error again on the node's thread: a catalogue error keeps its code. */
export function deserializeError(error: SerializedError): Error {
  if (error.name === 'SvcError' && error.code) {
    try {
      const revived = new SvcError(error.code as ErrorCode, error.message);
      revived.stack = error.stack;
      return revived;
    } catch {
      // Not a code of this version's catalogue: a plain error below.
    }
  }
  const revived = new Error(error.message);
  revived.name = error.name;
  revived.stack = error.stack;
  return revived;
}
