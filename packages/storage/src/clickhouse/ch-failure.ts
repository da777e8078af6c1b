import { SvcError } from '@svc/protocol';
import { STORAGE_RETRY_AFTER_SECONDS } from '../duckdb/duckdb-database';

/** Node's socket errors: the server cannot be reached or went away. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET']);

/**
 * ClickHouse error codes that say the server cannot do the work now rather than that the
 * statement is wrong: it will pass later, on this server or after a restart.
 */
const UNAVAILABLE_CH_CODES = new Set([
  159, // TIMEOUT_EXCEEDED: max_execution_time ran out (a busy server)
  202, // TOO_MANY_SIMULTANEOUS_QUERIES
  209, // SOCKET_TIMEOUT
  210, // NETWORK_ERROR
  241, // MEMORY_LIMIT_EXCEEDED
  242, // TABLE_IS_READ_ONLY
  243, // NOT_ENOUGH_SPACE
  252, // TOO_MANY_PARTS: inserts outrun merges; the writer retries later
  319, // UNKNOWN_STATUS_OF_INSERT
  425, // SYSTEM_ERROR
]);

/**
 * The `Code: NNN` of a ClickHouse error. 18.16 words its errors so that the client's parser does
 * not recognise them (`code` stays undefined), so the number is read from the message text,
 * which every version starts with `Code: NNN`.
 */
export function chErrorCode(error: unknown): number | null {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : '';
  const match = /(?:^|\s)Code: (\d+)/.exec(message);
  return match ? Number(match[1]) : null;
}

export function isChUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && SOCKET_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  // The client's own request timeout and a socket closed under a request.
  if (/^Timeout error\.?$|socket hang up|other side closed/i.test(message)) return true;
  const chCode = chErrorCode(error);
  return chCode !== null && UNAVAILABLE_CH_CODES.has(chCode);
}

/** The catalogue error for a failure `isChUnavailable` recognises; other errors are returned as they are. */
export function chFailure(error: unknown): unknown {
  if (error instanceof SvcError || !isChUnavailable(error)) return error;
  // The cause (with the server's address) is for logs; a failed insert may or may not have
  // been stored, so the answer promises nothing (a retry is deduplicated by event id).
  return new SvcError('storage_unavailable', 'The service cannot use its event database right now. Retry later.', {
    cause: error,
    headers: { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
  });
}
