import type { FastifyInstance } from 'fastify';

const HOME = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Svc</title><link rel="icon" href="data:,">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1d1b29}code{background:#f1eefe;padding:.1em .3em;border-radius:4px}</style>
</head><body>
<h1>Svc is running</h1>
<p>Engagement and commerce events for live-stream broadcasts.</p>
<ul>
<li><a href="/v1/openapi.json">REST API (OpenAPI 3.1)</a></li>
<li><a href="/healthz">/healthz</a> · <a href="/readyz">/readyz</a> · <a href="/metrics">/metrics</a></li>
</ul>
<p>The API key and admin token of tenant <code>demo</code> were printed when the server first started.</p>
</body></html>`;

export async function homeRoutes(app: FastifyInstance): Promise<void> {
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.type('text/html; charset=utf-8').send(HOME));
}
