import { SvcError } from '@svc/protocol';
import { STORAGE_RETRY_AFTER_SECONDS } from '../duckdb/duckdb-database';

/**
 * Failures of the way to PostgreSQL rather than of a statement: the server cannot be reached,
 * went away, is shutting down or starting, has no connection slot or no disk left, or is a
 * read-only standby after a failover. The client reconnects by itself on the next query, so
 * these pass once the server is back.
 */
const UNAVAILABLE_CODES = new Set([
  // Node's socket errors.
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE',
  // postgres.js: the connection closed under a query, was torn down, or never opened in time.
  'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  // SQLSTATE: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections,
  // disk_full, read_only_sql_transaction.
  '57P01', '57P02', '57P03', '53300', '53100', '25006',
]);

/** SQLSTATE class 08: connection exception. */
const CONNECTION_EXCEPTION_CLASS = '08';

export function isPgUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return UNAVAILABLE_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && code.startsWith(CONNECTION_EXCEPTION_CLASS));
}

/** The catalogue error for a failure `isPgUnavailable` recognises; other errors are returned as they are. */
export function pgFailure(error: unknown): unknown {
  if (error instanceof SvcError || !isPgUnavailable(error)) return error;
  // The cause (with the server's address) is for logs; a failure during COMMIT leaves unknown
  // whether it took effect, so the answer promises nothing about what was stored.
  return new SvcError('storage_unavailable', 'The service cannot use its metadata database right now. Retry later.', {
    cause: error,
    headers: { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
  });
}
