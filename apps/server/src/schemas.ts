/** Shared JSON Schemas for route definitions; they also make up the OpenAPI document. */
export const PROBLEM_SCHEMA_ID = 'Problem';

export const problemSchema = {
  $id: PROBLEM_SCHEMA_ID,
  type: 'object',
  description: 'RFC 9457 problem details; `code` is stable and comes from the error catalogue.',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string' },
    instance: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['path', 'code', 'message'],
        properties: { path: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
} as const;

const problemRef = { $ref: `${PROBLEM_SCHEMA_ID}#` };

/** The media type of every error answer (RFC 9457). */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

const wholeNumber = (description: string) => ({ type: 'integer', minimum: 0, description });
const retryAfter = wholeNumber('Seconds to wait before trying again');

/** Headers that come with a problem of the status: when to retry, and the rate limit's state. */
const PROBLEM_HEADERS: Record<number, Record<string, object>> = {
  429: {
    'retry-after': retryAfter,
    'ratelimit-limit': wholeNumber('Requests the bucket holds'),
    'ratelimit-remaining': wholeNumber('Requests left in the bucket'),
    'ratelimit-reset': wholeNumber('Seconds until the bucket is full again'),
  },
  503: { 'retry-after': wholeNumber('Seconds to wait before trying again (when the service can tell)') },
};

/** Problem responses for the given status codes. */
export function problems(...statuses: number[]): Record<number, unknown> {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: 'Problem details', content: { [PROBLEM_MEDIA_TYPE]: { schema: problemRef } }, ...(PROBLEM_HEADERS[status] ? { headers: PROBLEM_HEADERS[status] } : {}) },
    ]),
  );
}

type Security = Array<Record<string, string[]>>;
export const ADMIN_SECURITY: Security = [{ adminToken: [] }];
export const API_KEY_SECURITY: Security = [{ apiKeyQuery: [] }, { apiKeyHeader: [] }];

/** For the session routes, which anyone may call: no credential is needed. */
export const NO_SECURITY: Security = [];

/** Marks a route schema whose body may be left out (the route fills in a default). */
export const OPTIONAL_BODY = 'x-optional-body';

type DocumentPaths = { paths?: Record<string, Record<string, { [OPTIONAL_BODY]?: boolean; requestBody?: { required?: boolean } }>> };

/**
 * What the OpenAPI generator has no option for: it marks every request body as required, so
 * operations marked `OPTIONAL_BODY` get `required: false` here (and lose the mark).
 */
export function finishOpenApiDocument<T extends object>(document: T): T {
  for (const operations of Object.values((document as DocumentPaths).paths ?? {})) {
    for (const operation of Object.values(operations)) {
      if (!operation[OPTIONAL_BODY]) continue;
      delete operation[OPTIONAL_BODY];
      if (operation.requestBody) operation.requestBody.required = false;
    }
  }
  return document;
}
