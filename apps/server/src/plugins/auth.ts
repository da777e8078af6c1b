import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { SvcError } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import { addressKey } from '@svc/realtime';
import type { TenantService } from '@svc/tenancy';
import { cookieValue, SESSION_COOKIE, type DashboardSessions } from '../dashboard-sessions';
import type { LimitDecision, TokenBucketLimiter } from '@svc/protocol';

export type CredentialKind = 'apiKey' | 'admin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant the request's credential belongs to; set by the auth hooks. */
    tenant: Tenant;
    credentialKind: CredentialKind;
  }
}

export interface Limiters {
  perKey: TokenBucketLimiter | null;
  perIp: TokenBucketLimiter | null;
}

export interface AuthGuards {
  /** Admin token in `Authorization: Bearer`, or a dashboard session cookie. */
  admin: onRequestAsyncHookHandler;
  /** Public API key in `x-svc-api-key` or the `apiKey` query parameter. */
  apiKey: onRequestAsyncHookHandler;
  /** Either of the two (ingest accepts server-to-server calls too). */
  apiKeyOrAdmin: onRequestAsyncHookHandler;
}

/**
 * Credential checks and rate limits, as `onRequest` hooks: a caller without the right
 * credential is refused before its body is read, parsed or validated, so that it learns
 * nothing from validation errors and costs no parsing. Unauthenticated and public-key traffic
 * is limited per client address before any lookup, so floods of bad keys stay cheap; every
 * credential then has its own bucket.
 */
export function createAuthGuards(
  tenants: TenantService,
  limiters: Limiters,
  sessions: DashboardSessions,
  /** The service's public URL (read per request: tests learn their port after start). */
  publicUrl: () => string,
): AuthGuards {
  const admin = async (request: FastifyRequest, reply: FastifyReply, token: string | null) => {
    // The dashboard carries its login in a cookie instead of the Bearer header.
    const sessionId = token === null ? cookieValue(request.headers.cookie, SESSION_COOKIE) : null;
    const tokenHash = sessionId ? await sessions.tokenHashOf(sessionId) : null;
    if (sessionId && tokenHash) {
      const tenant = await tenants.authenticateTokenHash(tokenHash);
      if (tenant) {
        requireSameOrigin(request, publicUrl());
        limit(limiters.perKey, `admin:${tenant.seq}`, reply);
        request.tenant = tenant;
        request.credentialKind = 'admin';
        return;
      }
      // Its token was revoked (perhaps by another process): the session ends with it.
      await sessions.close(sessionId);
    }
    if (token === null) {
      limitAddress(request, reply, limiters);
      const detail = apiKeyOf(request)
        ? 'This route needs an admin token in "Authorization: Bearer svc_sk_…"; a public API key is not enough.'
        : 'Send an admin token in "Authorization: Bearer svc_sk_…".';
      throw new SvcError('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer' } });
    }
    const tenant = await tenants.authenticateAdminToken(token);
    if (!tenant) {
      limitAddress(request, reply, limiters);
      throw new SvcError('unauthorized', 'The admin token is unknown or revoked.', { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
    }
    limit(limiters.perKey, `admin:${tenant.seq}`, reply);
    request.tenant = tenant;
    request.credentialKind = 'admin';
  };

  const apiKey = async (request: FastifyRequest, reply: FastifyReply) => {
    limitAddress(request, reply, limiters);
    const key = apiKeyOf(request);
    if (!key) throw new SvcError('api_key_missing', 'Pass the API key as the "apiKey" query parameter or the "x-svc-api-key" header.');
    const tenant = await tenants.authenticateApiKey(key);
    if (!tenant) throw new SvcError('invalid_api_key', 'The API key is unknown or has been revoked.');
    limit(limiters.perKey, `key:${key}`, reply);
    request.tenant = tenant;
    request.credentialKind = 'apiKey';
  };

  return {
    admin: async (request, reply) => admin(request, reply, bearerOf(request)),
    apiKey,
    apiKeyOrAdmin: async (request, reply) => {
      const token = bearerOf(request);
      if (token !== null) return admin(request, reply, token);
      return apiKey(request, reply);
    },
  };
}

/** Methods that only read; every other method changes state. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether a request of this method may change state (and so needs the dashboard's origin when a cookie carries it). */
export function changesState(method: string): boolean {
  return !SAFE_METHODS.has(method);
}

/**
 * A browser attaches the session cookie to requests from any page of the same site (another
 * port of the same host included, SameSite does not tell ports apart), so a cookie-borne
 * request that changes state must show that it comes from the dashboard's own origin: an
 * `Origin` header equal to the service's origin, or `Sec-Fetch-Site: same-origin`. Browsers
 * send one of them on every such request; a page elsewhere cannot forge either.
 */
function requireSameOrigin(request: FastifyRequest, publicUrl: string): void {
  if (!changesState(request.method)) return;
  if (request.headers['sec-fetch-site'] === 'same-origin') return;
  const origin = request.headers.origin;
  if (origin && (origin === originOf(publicUrl) || origin === `${request.protocol}://${request.host}`)) return;
  throw new SvcError(
    'cross_origin_request',
    'A dashboard session may change things only from the dashboard itself (Origin or Sec-Fetch-Site must name this service); other clients send "Authorization: Bearer svc_sk_…".',
  );
}

function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

function bearerOf(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : '';
}

function apiKeyOf(request: FastifyRequest): string | null {
  const header = request.headers['x-svc-api-key'];
  if (typeof header === 'string' && header) return header;
  const query = (request.query as { apiKey?: unknown } | undefined)?.apiKey;
  return typeof query === 'string' && query ? query : null;
}

/**
 * Counts a request against its client address's budget (429 when spent); an IPv6 address counts
 * with its /64, as WebSocket admission does, since one subscriber holds a whole /64.
 */
export function limitAddress(request: FastifyRequest, reply: FastifyReply, limiters: Limiters): void {
  limit(limiters.perIp, `ip:${addressKey(request.ip)}`, reply);
}

function limit(limiter: TokenBucketLimiter | null, key: string, reply: FastifyReply): void {
  if (!limiter) return;
  const decision = limiter.take(key);
  reply.headers(rateLimitHeaders(decision));
  if (!decision.allowed) {
    throw new SvcError('rate_limited', `Too many requests; retry in ${decision.retryAfterSeconds} s.`, {
      headers: { ...rateLimitHeaders(decision), 'retry-after': String(decision.retryAfterSeconds) },
    });
  }
}

function rateLimitHeaders(decision: LimitDecision): Record<string, string> {
  return {
    'ratelimit-limit': String(decision.limit),
    'ratelimit-remaining': String(decision.remaining),
    'ratelimit-reset': String(decision.resetSeconds),
  };
}
