import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import type { ServerConfig } from '../config';

type HelmetOptions = Omit<FastifyHelmetOptions, 'global' | 'enableCSPNonces'>;

/** One year, as the HSTS preload list expects. */
const HSTS_MAX_AGE_SECONDS = 365 * 24 * 60 * 60;

/**
 * API answers are data, never documents: nothing may load from them or frame them
 * (OWASP REST Security). The pages override this with `pageSecurity`.
 */
const API_DIRECTIVES = {
  'default-src': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
  'frame-ancestors': ["'none'"],
};

/**
 * Security headers on every answer (helmet): a locked-down CSP for the API, no framing,
 * `nosniff`, no referrer, same-origin resource and opener policies, and HSTS when the
 * service is published over https. Routes that serve the SDK to customers' pages loosen
 * their resource policy themselves.
 */
export async function registerSecurityHeaders(app: FastifyInstance, config: ServerConfig): Promise<void> {
  const https = config.publicUrl.startsWith('https:');
  await app.register(helmet, {
    global: true,
    contentSecurityPolicy: { useDefaults: false, directives: API_DIRECTIVES },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: https ? { maxAge: HSTS_MAX_AGE_SECONDS, includeSubDomains: true } : false,
  });
}

/**
 * The policy of the dashboard and demo pages: scripts only from this origin (the esbuild
 * bundles; no inline script, no eval), styles from this origin or inline (the overlay's
 * shadow DOM and the pages carry their CSS inline), images also from https (product
 * images), connections to this origin and to the published REST/WebSocket origin.
 */
export function pageSecurity(config: ServerConfig): HelmetOptions {
  const publishedOrigins = () => {
    const url = new URL(config.publicUrl);
    const ws = `${url.protocol === 'https:' ? 'wss:' : 'ws:'}//${url.host}`;
    return `${url.origin} ${ws}`;
  };
  return {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'self'"],
        'script-src': ["'self'"],
        'script-src-attr': ["'none'"],
        'style-src': ["'self'", "'unsafe-inline'"],
        'img-src': ["'self'", 'data:', 'https:'],
        'font-src': ["'self'", 'data:'],
        // Read per request: tests and proxies may change the published URL after start-up.
        'connect-src': ["'self'", publishedOrigins],
        'media-src': ["'self'", 'blob:'],
        'object-src': ["'none'"],
        'base-uri': ["'none'"],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
      },
    },
  };
}

/**
 * The pages' Content-Security-Policy as a header value, for answers that no route with
 * `pageSecurity` serves (the HTML 404 page comes from the not-found handler).
 */
export function pagePolicyHeader(config: ServerConfig): string {
  const csp = pageSecurity(config).contentSecurityPolicy;
  const directives = (typeof csp === 'object' && csp.directives) || {};
  return Object.entries(directives)
    .map(([name, values]) => [name, ...(values as Array<string | (() => string)>).map((v) => (typeof v === 'function' ? v() : v))].join(' '))
    .join(';');
}
