import { SvcError } from '@svc/protocol';
import { STORAGE_RETRY_AFTER_SECONDS } from '../duckdb/duckdb-database';

/**
 * The catalogue error for a publish or request NATS could not complete: no server reachable,
 * the connection closed or is reconnecting (the request then times out), no JetStream
 * responding (the stream's leader is being elected), or the stream refused the message
 * (e.g. it is full). Whether an unanswered publish was stored is unknown, so the answer
 * promises nothing: the client retries, and the batch's `Nats-Msg-Id` drops the copy.
 */
export function natsFailure(error: unknown, what: string): SvcError {
  if (error instanceof SvcError) return error;
  return new SvcError('storage_unavailable', `The service cannot ${what} right now; nothing of this request was stored. Retry later.`, {
    cause: error,
    headers: { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
  });
}
