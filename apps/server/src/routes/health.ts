import type { FastifyInstance } from 'fastify';
import { SvcError } from '@svc/protocol';
import type { Services } from '../services';

/** How soon a caller told "not ready" should ask again, s. */
const NOT_READY_RETRY_AFTER_SECONDS = 5;

export async function healthRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async () => {
    try {
      await services.ready();
    } catch (error) {
      if (error instanceof SvcError && error.code === 'storage_unavailable') throw error;
      // Not ready yet (e.g. the event pipeline starting again after an outage) says so, and when to ask again.
      const detail = error instanceof SvcError && error.code === 'not_ready' ? error.message : 'The database does not answer.';
      throw new SvcError('not_ready', detail, { cause: error, headers: { 'retry-after': String(NOT_READY_RETRY_AFTER_SECONDS) } });
    }
    return { status: 'ready' };
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(services.metrics.registry.contentType);
    return services.metrics.registry.metrics();
  });
}
