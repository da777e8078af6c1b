import type { FastifyServerOptions } from 'fastify';
import type { DestinationStream } from 'pino';

/**
 * Query parameters whose values never reach a log line, by name as the server decodes it,
 * in lower case: credentials (wherever a client might put them) and a viewer's userId.
 */
const MASKED_QUERY_PARAMS = new Set([
  'apikey', 'api_key', 'x-svc-api-key', 'token', 'access_token', 'id_token', 'refresh_token',
  'authorization', 'auth', 'secret', 'password', 'session', 'svc_session', 'cookie',
  'userid', 'user_id',
]);
/** Path parameters holding a viewer's id. */
const MASKED_PATH_PARAMS = new Set(['userid']);
/**
 * Credentials by shape (admin tokens, API keys, webhook secrets), masked wherever they
 * appear in a log line, encoded or not.
 */
const CREDENTIAL_SHAPE = /(svc_sk_|svc_pk_|whsec_)[0-9A-Za-z+/=_-]*/gi;
const ENCODED_CREDENTIAL_SHAPE = /svc(_|%5f)(s|p)k(_|%5f)|whsec(_|%5f)/i;
const MASK = '[redacted]';

/** Paths pino masks wherever they appear in a logged object. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-svc-api-key"]',
  'headers.authorization',
  'headers.cookie',
  '*.commerceApiKey',
  '*.adminToken',
  '*.token',
  '*.secret',
  'commerceApiKey',
  'adminToken',
  'token',
  'secret',
];

/**
 * Percent-decoding as the server would apply it, repeated so that double encoding hides
 * nothing; broken sequences stay as they are. Only used to recognise names and shapes.
 */
function decodeLoosely(text: string): string {
  let current = text.replace(/\+/g, ' ');
  for (let round = 0; round < 4; round++) {
    const next = current.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === current) break;
    current = next;
  }
  return current;
}

const looksLikeCredential = (raw: string) => ENCODED_CREDENTIAL_SHAPE.test(decodeLoosely(raw));

/**
 * A request URL fit for the logs: the values of credential and userId query parameters
 * (recognised by decoded name, so `?%61piKey=` is masked too), userId path segments, and
 * anything shaped like a credential in any segment or parameter are replaced by `[redacted]`.
 * `routePattern` (`/v1/users/:userId/events`) says which path segments are parameters.
 */
export function redactUrl(url: string, routePattern?: string): string {
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  const query = queryAt < 0 ? null : url.slice(queryAt + 1);
  const patternSegments = routePattern?.split('/');
  const segments = path.split('/').map((segment, i, all) => {
    const param = patternSegments?.[i]?.startsWith(':') ? patternSegments[i]!.slice(1).toLowerCase() : null;
    // Unrouted paths (a typo, a 404) still hide what follows /users/.
    const personal = (param !== null && MASKED_PATH_PARAMS.has(param)) || (i > 0 && all[i - 1] === 'users' && segment !== '');
    return personal || looksLikeCredential(segment) ? MASK : segment;
  });
  if (query === null) return segments.join('/');
  const pairs = query.split('&').map((pair) => {
    const equals = pair.indexOf('=');
    const name = equals < 0 ? pair : pair.slice(0, equals);
    if (looksLikeCredential(name)) return MASK;
    if (equals < 0) return pair;
    const masked = MASKED_QUERY_PARAMS.has(decodeLoosely(name).trim().toLowerCase()) || looksLikeCredential(pair.slice(equals + 1));
    return masked ? `${name}=${MASK}` : pair;
  });
  return `${segments.join('/')}?${pairs.join('&')}`;
}

/** The last guard on every log line: nothing shaped like a credential is written. */
export function maskCredentials(line: string): string {
  return line.replace(CREDENTIAL_SHAPE, `$1${MASK}`);
}

interface LoggedRequest {
  method: string;
  url: string;
  routeOptions?: { url?: string };
}

/** pino options for Fastify: JSON lines, secrets masked, request URLs without credentials or userIds. */
export function loggerOptions(level: string, stream?: DestinationStream): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: MASK },
    serializers: {
      req: (req: LoggedRequest) => ({ method: req.method, url: redactUrl(req.url, req.routeOptions?.url) }),
    },
    hooks: { streamWrite: maskCredentials },
    ...(stream ? { stream } : {}),
  };
}
