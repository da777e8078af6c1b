import type { FastifyInstance, RouteOptions } from 'fastify';
import { problems } from '../schemas';
import { changesState } from './auth';

/** What the credential check of a route is, as far as its answers are concerned. */
export interface RouteCredential {
  /**
   * An auth guard runs before the handler: 401 without a valid credential, 429 when over
   * budget, 503 while the database cannot serve (shutting down, or refusing writes).
   */
  guarded: boolean;
  /** A public API key is one way in: without any key the answer is 400 `api_key_missing`. */
  takesApiKey: boolean;
  /** The dashboard session cookie is one way in: state-changing calls need the dashboard's origin (403). */
  takesSessionCookie: boolean;
}

/** Methods whose requests Fastify reads a body of (DELETE and OPTIONS when one is sent). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

interface RouteShape {
  method: string;
  url: string;
  hasQuerystring: boolean;
  credential: RouteCredential;
}

/**
 * The statuses that a route of this shape answers whatever its handler does: 405 on every path
 * (another method than the documented ones); 400 and 414 where the path has parameters
 * (malformed or over-long segments); 400 on query strings; 400, 413 and 415 on methods that
 * carry a body (broken JSON, too large, another media type); 401, 429 and 503 behind an auth
 * guard (every guarded route uses the database), 400 where a public key is expected, 403 for
 * state-changing calls that a session cookie may authenticate (they must come from the
 * dashboard's own origin).
 */
export function commonStatuses(route: RouteShape): number[] {
  const statuses = new Set<number>([405]);
  if (route.url.includes(':')) statuses.add(400).add(414);
  if (route.hasQuerystring) statuses.add(400);
  if (BODY_METHODS.has(route.method)) statuses.add(400).add(413).add(415);
  const { credential } = route;
  if (credential.guarded) statuses.add(401).add(429).add(503);
  if (credential.takesApiKey) statuses.add(400);
  if (credential.takesSessionCookie && changesState(route.method)) statuses.add(403);
  return [...statuses].sort((a, b) => a - b);
}

/**
 * Adds the common answers (see `commonStatuses`) to the response schemas of every
 * documented route registered after this call, so that the OpenAPI document lists every
 * status an operation can answer, and new routes get them without thinking of it. A route's
 * own description of a status wins.
 */
export function documentCommonAnswers(app: FastifyInstance, credentialOf: (route: RouteOptions) => RouteCredential): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as (RouteOptions['schema'] & { hide?: boolean; response?: Record<string, unknown> }) | undefined;
    if (!schema || schema.hide || !schema.response) return;
    const credential = credentialOf(route);
    const statuses = new Set(
      [route.method].flat().flatMap((method) => commonStatuses({ method, url: route.url, hasQuerystring: schema.querystring !== undefined, credential })),
    );
    route.schema = { ...schema, response: { ...problems(...statuses), ...schema.response } };
  });
}
