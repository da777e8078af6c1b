import type { FastifyServerOptions } from 'fastify';
import type { DestinationStream } from 'pino';

/** Query parameters whose values never reach a log line. */
const SECRET_QUERY_PARAMS = /([?&](?:apiKey|token|secret)=)[^&#]*/gi;

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

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY_PARAMS, '$1[redacted]');
}

/** pino options for Fastify: JSON lines, secrets masked, request URLs without credentials. */
export function loggerOptions(level: string, stream?: DestinationStream): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      req: (req: { method: string; url: string; id?: string }) => ({ method: req.method, url: redactUrl(req.url) }),
    },
    ...(stream ? { stream } : {}),
  };
}
