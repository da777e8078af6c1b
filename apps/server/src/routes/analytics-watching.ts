import type { FastifyInstance } from 'fastify';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

/** `GET /v1/analytics/watching-now`: viewers connected now, per broadcast (the Broadcasts page's live state). */
export async function analyticsWatchingRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  app.get(
    '/v1/analytics/watching-now',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'Viewers connected now, per broadcast',
        description: 'Each broadcast of the tenant with viewers connected to the realtime gateway now, most watched first. Broadcasts nobody watches are left out. The count is the one `viewers.live` of the overview gives for a broadcast filter. In cluster mode these counts cover only the sockets of the node that answers (viewers connected to other nodes are not counted yet).',
        tags: ['Analytics'],
        security: ADMIN_SECURITY,
        operationId: 'getWatchingNow',
        querystring: { type: 'object', additionalProperties: false, properties: {} },
        response: {
          200: {
            type: 'object',
            required: ['data'],
            properties: {
              data: {
                type: 'array',
                items: { type: 'object', required: ['broadcastId', 'live'], properties: { broadcastId: { type: 'string' }, live: { type: 'integer', minimum: 1 } } },
              },
            },
          },
          ...problems(400, 401, 429),
        },
      },
    },
    async (request) => ({ data: await services.analytics.watchingNow(request.tenant) }),
  );
}
