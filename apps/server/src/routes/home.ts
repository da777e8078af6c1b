import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerConfig } from '../config';
import { pagePolicyHeader, pageSecurity } from '../plugins/security-headers';
import type { Services } from '../services';
import { DashboardAssets, preferredEncoding } from './dashboard-assets';

/** The paths the dashboard app routes on the client; each serves the same page. */
export const DASHBOARD_PATHS = ['/', '/events', '/broadcasts', '/rejected', '/settings'] as const;
/** Hashed names change with the content, so browsers may keep them for a year without asking. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

function page(script: string, notFound = false): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Svc dashboard</title><link rel="icon" href="data:,">
</head><body><div id="app"><p style="font-family:system-ui;padding:20px">${notFound ? 'Page not found. <a href="/">Go to the dashboard</a>.' : 'Loading the dashboard…'}</p></div>
<noscript>The dashboard needs JavaScript. The REST API is described at /v1/openapi.json.</noscript>
<script src="/assets/${script}"></script></body></html>`;
}

/**
 * The dashboard single-page app: one HTML page (revalidated on every visit, `no-cache`) for
 * every path the app routes, and its content-hashed script served precompressed (brotli or
 * gzip, as the browser accepts) and immutable.
 */
export async function homeRoutes(app: FastifyInstance, { services, dashboardAssets }: { services: Services; dashboardAssets?: DashboardAssets }): Promise<void> {
  const helmet = pageSecurity(services.config);
  const assets = dashboardAssets ?? new DashboardAssets();
  for (const path of DASHBOARD_PATHS) {
    app.get(path, { schema: { hide: true }, helmet }, async (_request, reply) =>
      reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(page(await assets.scriptName())),
    );
  }
  // Pages loaded before a deploy still name this file: it always holds the current build.
  app.get('/assets/dashboard.js', { schema: { hide: true } }, async (_request, reply) => {
    const asset = (await assets.asset(await assets.scriptName()))!;
    return reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(asset.identity);
  });
  app.get<{ Params: { name: string } }>('/assets/:name', { schema: { hide: true } }, async (request, reply: FastifyReply) => {
    const asset = await assets.asset(request.params.name);
    if (!asset) return reply.callNotFound();
    const encoding = preferredEncoding(request.headers['accept-encoding']);
    reply.type('text/javascript; charset=utf-8').header('cache-control', IMMUTABLE).header('vary', 'accept-encoding');
    if (!encoding) return reply.send(asset.identity);
    return reply.header('content-encoding', encoding).send(asset.encoded[encoding]);
  });
}

/**
 * The 404 page for browsers: the app itself (it shows "Page not found" with the nav), under
 * the pages' security policy instead of the API's, which would block its script.
 */
export function dashboardNotFoundPage(assets: DashboardAssets, config: ServerConfig) {
  return async (_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> =>
    reply.code(404).type('text/html; charset=utf-8').header('cache-control', 'no-cache').header('content-security-policy', pagePolicyHeader(config)).send(page(await assets.scriptName(), true));
}
