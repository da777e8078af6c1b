import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { problemFor, SvcError, type FieldError } from '@svc/protocol';

/**
 * The one place where errors become RFC 9457 problem+json: catalogue errors as they are,
 * framework errors mapped to catalogue codes, anything else a logged 500 without details.
 */
export function registerProblemErrors(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const svcError = toSvcError(error);
    if (svcError.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(request, reply, svcError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, new SvcError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`)),
  );
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
