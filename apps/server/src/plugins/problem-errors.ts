import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { problemFor, SvcError, type FieldError } from '@svc/protocol';
import { AllowedMethods } from './allowed-methods';

/**
 * The one place where errors become RFC 9457 problem+json: catalogue errors as they are,
 * framework errors mapped to catalogue codes, anything else a logged 500 without details.
 */
export function registerProblemErrors(app: FastifyInstance, options: { htmlNotFound?: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> } = {}): void {
  const allowed = new AllowedMethods();
  allowed.collect(app);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const svcError = toSvcError(error);
    if (svcError.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(request, reply, svcError);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const methods = allowed.of(path);
    if (methods.length && !methods.includes(request.method)) {
      const allow = methods.join(', ');
      return sendProblem(request, reply, new SvcError('method_not_allowed', `${path} supports ${allow}, not ${request.method}.`, { headers: { allow } }));
    }
    if (options.htmlNotFound && wantsHtmlPage(request, path)) return options.htmlNotFound(request, reply);
    return sendProblem(request, reply, new SvcError('not_found', `No route ${request.method} ${path}.`));
  });
}

/** A browser navigating to a path outside the API gets a page; API clients and `/v1/*` keep problem+json. */
function wantsHtmlPage(request: FastifyRequest, path: string): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  if (path === '/v1' || path.startsWith('/v1/')) return false;
  return /\btext\/html\b/i.test(request.headers.accept ?? '');
}

/**
 * Fastify's `frameworkErrors`: URLs that the router refuses before any hook runs (broken
 * percent-encoding, a path parameter over the length limit).
 */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
  let svcError: SvcError;
  if (error.code === 'FST_ERR_BAD_URL') svcError = new SvcError('malformed_request', 'The URL is not valid (broken percent-encoding).');
  else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') svcError = new SvcError('uri_too_long', 'A path segment is longer than this API accepts.');
  else {
    request.log.error({ err: error }, 'router failed');
    svcError = new SvcError('internal_error', 'Something went wrong on our side; the request id identifies it in the logs.');
  }
  sendProblem(request, reply, svcError);
}

/**
 * Node's `clientError`: bytes that are not HTTP/1.1 (or headers over the size limit). There is
 * no request object yet, so the answer is written to the socket, which is then closed.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const svcError =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new SvcError('header_too_large', 'The request headers are larger than this server accepts.')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new SvcError('request_timeout', 'The request did not arrive in time.')
        : new SvcError('malformed_request', 'The request is not valid HTTP/1.1.');
  const body = JSON.stringify(problemFor(svcError));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${svcError.status} ${STATUS_CODES[svcError.status]}\r\n` +
        'Content-Type: application/problem+json\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${randomUUID()}\r\n` +
        'X-Content-Type-Options: nosniff\r\n' +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: SvcError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  return reply
    .code(error.status)
    .type('application/problem+json')
    .send(JSON.stringify(problemFor(error, request.url.split('?')[0])));
}

function toSvcError(error: FastifyError): SvcError {
  if (error instanceof SvcError) return error;
  if (error.validation) {
    const errors: FieldError[] = error.validation.map((v) => {
      const missing = (v.params as { missingProperty?: string }).missingProperty;
      const extra = (v.params as { additionalProperty?: string }).additionalProperty;
      const base = `${error.validationContext === 'body' ? '' : `/${error.validationContext}`}${v.instancePath}`;
      if (missing) return { path: `${base}/${missing}`, code: 'missing_field', message: 'is required' };
      if (extra) return { path: `${base}/${extra}`, code: 'unknown_field', message: 'is not a known field' };
      return { path: base, code: v.keyword === 'type' ? 'invalid_type' : 'invalid_value', message: v.message ?? 'is invalid' };
    });
    const first = errors[0];
    return new SvcError('validation_failed', first ? `${first.path || error.validationContext} ${first.message}` : error.message, { errors });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new SvcError('payload_too_large', 'The request body is larger than this route accepts (512 KB for events).');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new SvcError('unsupported_media_type', 'Send application/json (or text/plain holding JSON, for sendBeacon).');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new SvcError('invalid_json', 'The body is empty.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new SvcError('invalid_body', 'Content-Length does not match the body.');
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new SvcError('invalid_json', 'The body is not valid JSON.');
  }
  if (error.statusCode === 413) return new SvcError('payload_too_large', error.message);
  if (error.statusCode === 415) return new SvcError('unsupported_media_type', error.message);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return new SvcError('invalid_body', error.message);
  return new SvcError('internal_error', 'Something went wrong on our side; the request id identifies it in the logs.', { cause: error });
}
