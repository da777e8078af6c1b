import type { FastifyInstance } from 'fastify';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

export async function rejectedEventRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  app.get(
    '/v1/rejected-events',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'Rejected events in quarantine (kept 30 days), newest first',
        tags: ['Events'],
        operationId: 'listRejectedEvents',
        security: ADMIN_SECURITY,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
            cursor: { type: 'string', description: 'The `nextCursor` of the previous page' },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['data', 'nextCursor'],
            properties: {
              data: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'string' },
                    receivedAt: { type: 'string' },
                    code: { type: 'string' },
                    detail: { type: 'string' },
                    event: { type: ['string', 'null'] },
                    errors: { type: 'array', items: { type: 'object', additionalProperties: true } },
                    payload: { description: 'The event as sent, personal data masked' },
                  },
                },
              },
              nextCursor: { type: ['string', 'null'] },
            },
          },
          ...problems(400, 401, 429),
        },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query as { limit: number; cursor?: string };
      return services.ingest.listRejected(request.tenant, limit, cursor);
    },
  );
}
