import type { FastifyInstance } from 'fastify';
import { jsonMayHoldLoneSurrogate, wellFormedValue } from '@svc/protocol';

/**
 * Every `application/json` body is parsed as Fastify does by default (prototype-poisoning keys
 * refused, an empty body an error) and then given the protocol's one rule for outside text:
 * a lone surrogate in any string or key becomes U+FFFD, so none reaches a service or storage.
 * Register on the root instance before the routes, which inherit it.
 */
export function registerWellFormedJson(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = String(body);
    parse(request, text, (error: Error | null, value?: unknown) => {
      if (error) return done(error, undefined);
      done(null, jsonMayHoldLoneSurrogate(text) ? wellFormedValue(value) : value);
    });
  });
}
