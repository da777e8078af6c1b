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
          'Viewer count (live, concurrent per bucket, peak, unique viewers), engagement rate, poll results, sponsor performance, revenue and funnel, as defined in the dashboard tooltips; `countries` lists the countries of the range (the choices of the country filter), `contests` lists entries per contest, `revenueOverTime` gross and orders per currency in the buckets of the viewer chart; `previous` holds the headline numbers of the period just before, as long, with the same filters. `from`/`to` as calendar dates are inclusive days of the time zone of the tenant (setting `timeZone`, default UTC; answered as `timeZone`); the buckets of the viewer chart (`bucketMs`: a minute, 15 minutes, an hour, a day, or one or more weeks, following the span shown, at most 401 points; a range longer than 400 days starts the chart at its first data, though no later than 400 days before its end) start at local times of that zone, each the highest per-minute count of concurrent sessions within it, and `peak` is the highest per-minute count; without `from` the last 7 days are shown. A range whose start is not before its end is refused with 400 `invalid_range`, and so is a `from` at or after now without `to` (the range would end now). `sponsorId` narrows sponsor performance, revenue and funnel only. `viewers.live` counts viewers connected to the realtime gateway now: in cluster mode only the sockets of the node that answers (viewers connected to other nodes are not counted yet).',
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
      const { filter } = parseExportQuery(request.query as ExportQueryParams, EXPORT_FILTER_NAMES, request.tenant.settings.timeZone);
      return services.analytics.overview(request.tenant, filter);
    },
  );
}
