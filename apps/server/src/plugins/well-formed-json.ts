import type { FastifyInstance } from 'fastify';
import { jsonMayHoldLoneSurrogate, SvcError, wellFormedValue } from '@svc/protocol';
import { pathOfNul } from './path-of-nul';

/**
 * Routes whose bodies are viewers' events, stored as sent: a U+0000 in them is data. Every other
 * body becomes metadata (names, overlay text, settings), which PostgreSQL cannot hold with a
 * U+0000 in text or jsonb: those bodies refuse it on every backend alike.
 */
const EVENT_ROUTES = new Set(['/v1/events']);

/**
 * Every `application/json` body is parsed as Fastify does by default (prototype-poisoning keys
 * refused, an empty body an error) and then given the protocol's one rule for outside text:
 * a lone surrogate in any string or key becomes U+FFFD, so none reaches a service or storage.
 * Outside event routes, a string or key holding U+0000 is refused (400 `invalid_body`).
 * Register on the root instance before the routes, which inherit it.
 */
export function registerWellFormedJson(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = String(body);
    parse(request, text, (error: Error | null, value?: unknown) => {
      if (error) return done(error, undefined);
      // JSON text can hold U+0000 only as the escape \u0000 (raw control characters are invalid).
      const nulAt = text.includes('\\u0000') && !EVENT_ROUTES.has(request.routeOptions.url ?? '') ? pathOfNul(value) : null;
      if (nulAt !== null) return done(new SvcError('invalid_body', `Text may not hold the character U+0000 (at ${nulAt || '/'}).`), undefined);
      done(null, jsonMayHoldLoneSurrogate(text) ? wellFormedValue(value) : value);
    });
  });
}
