import type { FastifyInstance } from 'fastify';
import { SvcError } from '@svc/protocol';
import type { Services } from '../services';

export async function healthRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async () => {
    try {
      await services.ready();
    } catch (error) {
      if (error instanceof SvcError && error.code === 'storage_unavailable') throw error;
      throw new SvcError('not_ready', 'The database does not answer.', { cause: error });
    }
    return { status: 'ready' };
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(services.metrics.registry.contentType);
    return services.metrics.registry.metrics();
  });
}
