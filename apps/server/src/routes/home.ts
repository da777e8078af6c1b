import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildDashboard, DASHBOARD_DIST } from '@svc/dashboard/build';
import { pageSecurity } from '../plugins/security-headers';
import type { Services } from '../services';

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Svc dashboard</title><link rel="icon" href="data:,">
</head><body><div id="app"><p style="font-family:system-ui;padding:20px">Loading the dashboard…</p></div>
<noscript>The dashboard needs JavaScript. The REST API is described at /v1/openapi.json.</noscript>
<script src="/assets/dashboard.js"></script></body></html>`;

/** The dashboard single-page app at `/` (built once if the bundle is missing). */
export async function homeRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  const helmet = pageSecurity(services.config);
  let bundle: Buffer | null = null;
  let building: Promise<unknown> | null = null;
  for (const path of ['/', '/events', '/broadcasts', '/rejected', '/settings']) {
    app.get(path, { schema: { hide: true }, helmet }, async (_request, reply) =>
      reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(PAGE),
    );
  }
  app.get('/assets/dashboard.js', { schema: { hide: true } }, async (_request, reply) => {
    if (!bundle) {
      const file = join(DASHBOARD_DIST, 'dashboard.js');
      if (!existsSync(file)) await (building ??= buildDashboard());
      bundle = readFileSync(file);
    }
    return reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(bundle);
  });
}
