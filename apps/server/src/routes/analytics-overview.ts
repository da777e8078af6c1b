import type { FastifyInstance } from 'fastify';
import { EXPORT_FILTER_NAMES, EXPORT_FILTER_PARAMETERS, parseExportQuery, type ExportQueryParams } from '@svc/export';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

export async function analyticsOverviewRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  app.get(
    '/v1/analytics/overview',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'The six dashboard panels for a set of filters',
        description:
          'Viewer count (live, concurrent per bucket, peak, unique viewers), engagement rate, poll results, sponsor performance, revenue and funnel, as defined in the dashboard tooltips. `from`/`to` as calendar dates are inclusive UTC days; without `from` the last 7 days are shown. A range whose start is not before its end is refused with 400 `invalid_range`. `sponsorId` narrows sponsor performance, revenue and funnel only.',
        tags: ['Analytics'],
        security: ADMIN_SECURITY,
        operationId: 'getAnalyticsOverview',
        querystring: { type: 'object', additionalProperties: false, properties: EXPORT_FILTER_PARAMETERS },
        response: { 200: { type: 'object', additionalProperties: true }, ...problems(400, 401, 429) },
      },
      // Parameters are validated by the export package so that each problem names its parameter.
      validatorCompiler: () => () => true,
    },
    async (request) => {
      const { filter } = parseExportQuery(request.query as ExportQueryParams, EXPORT_FILTER_NAMES);
      return services.analytics.overview(request.tenant, filter);
    },
  );
}
