import type { FieldError } from './event-types';

/**
 * The one catalogue of error codes. HTTP answers map a code to RFC 9457 problem+json in one
 * place (the server's problem plugin); per-event rejections in an ingest answer use the same
 * codes. Codes are stable: clients may branch on them.
 */
export const ERROR_CATALOGUE = {
  api_key_missing: { status: 400, title: 'API key missing' },
  invalid_api_key: { status: 401, title: 'Invalid API key' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  validation_failed: { status: 400, title: 'Validation failed' },
  invalid_json: { status: 400, title: 'Body is not valid JSON' },
  invalid_body: { status: 400, title: 'Body has the wrong shape' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  unsupported_format: { status: 406, title: 'Unsupported format' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  rate_limited: { status: 429, title: 'Too many requests' },
  // Requests the HTTP layer cannot take apart.
  malformed_request: { status: 400, title: 'Malformed request' },
  request_timeout: { status: 408, title: 'Request timeout' },
  uri_too_long: { status: 414, title: 'URI too long' },
  header_too_large: { status: 431, title: 'Request headers too large' },
  // Per-event rejections (also usable as whole-request answers).
  unknown_event: { status: 422, title: 'Unknown event name' },
  missing_field: { status: 422, title: 'Required field missing' },
  invalid_type: { status: 422, title: 'Field has the wrong type' },
  invalid_value: { status: 422, title: 'Field has an invalid value' },
  unknown_field: { status: 422, title: 'Unknown field' },
  pii_detected: { status: 422, title: 'Personal data detected' },
  timestamp_in_future: { status: 422, title: 'Timestamp too far in the future' },
  timestamp_too_old: { status: 422, title: 'Timestamp too old' },
  event_too_large: { status: 413, title: 'Event too large' },
  poll_vote_invalid: { status: 422, title: 'Vote does not match the poll' },
  // Realtime gateway answers (sent in `error` frames).
  invalid_message: { status: 400, title: 'Invalid message' },
  unknown_message_type: { status: 400, title: 'Unknown message type' },
  overlay_not_active: { status: 409, title: 'Overlay not active' },
  already_voted: { status: 409, title: 'Already voted' },
  already_entered: { status: 409, title: 'Already entered' },
  poll_closed: { status: 409, title: 'Poll closed' },
  contest_closed: { status: 409, title: 'Contest closed' },
  // Server side.
  database_locked: { status: 503, title: 'Database in use by another process' },
  storage_unavailable: { status: 503, title: 'Storage is unavailable' },
  not_ready: { status: 503, title: 'Service not ready' },
  internal_error: { status: 500, title: 'Internal server error' },
  // Dashboard session cookies work only from the dashboard's own pages.
  cross_origin_request: { status: 403, title: 'Cross-origin request refused' },
  // An accepted event the event database refuses to store: set aside in the quarantine, not retried.
  event_not_storable: { status: 500, title: 'Event refused by the event database' },
  // A time range whose start is not before its end (e.g. from=2026-11-20&to=2026-11-10).
  invalid_range: { status: 400, title: 'Time range is inverted or empty' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface SvcErrorOptions {
  errors?: FieldError[];
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error with a catalogue code; thrown anywhere, answered as problem+json at the edge. */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors?: FieldError[];
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, detail?: string, options: SvcErrorOptions = {}) {
    super(detail ?? ERROR_CATALOGUE[code].title, { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = ERROR_CATALOGUE[code].status;
    this.errors = options.errors;
    this.headers = options.headers;
  }
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, value);
}

/** RFC 9457 body. `type` is a URN so that it never depends on where the service runs. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: FieldError[];
  instance?: string;
}

export function problemFor(error: SvcError, instance?: string): Problem {
  const problem: Problem = {
    type: `urn:svc:error:${error.code}`,
    title: ERROR_CATALOGUE[error.code].title,
    status: error.status,
    detail: error.message,
    code: error.code,
  };
  if (error.errors?.length) problem.errors = error.errors;
  if (instance) problem.instance = instance;
  return problem;
}
