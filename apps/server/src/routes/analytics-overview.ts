import type { FastifyInstance } from 'fastify';
import { parseExportQuery, type ExportQueryParams } from '@svc/export';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

const str = (description: string) => ({ type: 'string', description });

export async function analyticsOverviewRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  app.get(
    '/v1/analytics/overview',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'The six dashboard panels for a set of filters',
        description:
          'Viewer count (live, concurrent per bucket, peak, unique viewers), engagement rate, poll results, sponsor performance, revenue and funnel, as defined in the dashboard tooltips. `from`/`to` as calendar dates are inclusive UTC days; without `from` the last 7 days are shown. `sponsorId` narrows sponsor performance, revenue and funnel only.',
        tags: ['Analytics'],
        security: ADMIN_SECURITY,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            campaignId: str('Campaign id'),
            broadcastId: str('Broadcast id'),
            from: str('Calendar date (inclusive) or date-time'),
            to: str('Calendar date (inclusive) or date-time (exclusive)'),
            country: str('ISO 3166-1 alpha-2'),
            sponsorId: str('Sponsor id'),
          },
        },
        response: { 200: { type: 'object', additionalProperties: true }, ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const { filter } = parseExportQuery(request.query as ExportQueryParams);
      return services.analytics.overview(request.tenant, filter);
    },
  );
}
