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
 * ClickHouse error codes of an insert that say a row's data cannot be read or stored (18.16
 * answers 25, 26, 27, 72 and 117 for the rows it refuses; current releases also the others).
 * Only these make the writer look for the row (see poison-rows.ts): any other failure concerns
 * the whole database (permissions, a read-only server, a missing table, a cut connection) and
 * the batch is retried as it is.
 */
const ROW_DATA_CH_CODES = new Set([
  6, // CANNOT_PARSE_TEXT
  25, // CANNOT_PARSE_ESCAPE_SEQUENCE: a lone surrogate (\ud800) in a string
  26, // CANNOT_PARSE_QUOTED_STRING: a null or a number for a string
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED: text for a number, a malformed UUID
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  53, // TYPE_MISMATCH
  70, // CANNOT_CONVERT_TYPE
  72, // CANNOT_PARSE_NUMBER: a negative tenant, a malformed number
  117, // INCORRECT_DATA: an unknown field
  131, // TOO_LARGE_STRING_SIZE
  321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
  376, // CANNOT_PARSE_UUID
]);

/** TOO_MANY_PARTS (252) when one insert spans more month partitions than a block may (`max_partitions_per_insert_block`). */
const TOO_MANY_PARTITIONS = /partitions for (a )?single INSERT block/i;

/** An insert refused for the data of a row in it (see ROW_DATA_CH_CODES). */
export function isChRowRefusal(error: unknown): boolean {
  const code = chErrorCode(error);
  return code !== null && ROW_DATA_CH_CODES.has(code);
}

/**
 * An insert refused because its rows span too many month partitions (old events): not a failure
 * that passes by itself, but smaller inserts of the same rows succeed.
 */
export function isChTooManyPartitions(error: unknown): boolean {
  return chErrorCode(error) === 252 && TOO_MANY_PARTITIONS.test(error instanceof Error ? error.message : String(error));
}

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
  return chCode !== null && UNAVAILABLE_CH_CODES.has(chCode) && !isChTooManyPartitions(error);
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
