import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildSdk, SDK_DIST } from '@svc/sdk/build';

const FILES = { 'svc-core.js': 'text/javascript; charset=utf-8', 'svc-core.mjs': 'text/javascript; charset=utf-8' } as const;

/** Serves the SDK bundles; builds them once if the folder is empty (a fresh clone without `npm run build`). */
export async function sdkAssetRoutes(app: FastifyInstance): Promise<void> {
  let built: Promise<unknown> | null = null;
  const cache = new Map<string, Buffer>();
  for (const name of Object.keys(FILES) as Array<keyof typeof FILES>) {
    app.get(`/sdk/${name}`, { schema: { hide: true } }, async (_request, reply) => {
      let body = cache.get(name);
      if (!body) {
        if (!existsSync(join(SDK_DIST, name))) await (built ??= buildSdk());
        body = readFileSync(join(SDK_DIST, name));
        cache.set(name, body);
      }
      return reply
        .type(FILES[name])
        .header('cache-control', 'public, max-age=300')
        .header('access-control-allow-origin', '*')
        .header('cross-origin-resource-policy', 'cross-origin')
        .send(body);
    });
  }
}
