import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { EXPORT_FILTER_NAMES, EXPORT_FILTER_PARAMETERS, parseExportQuery, type ExportQueryParams } from '@svc/export';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

const KEEP_ALIVE_MS = 15_000;

/**
 * `GET /v1/analytics/live`: Server-Sent Events for the dashboard's live mode: streams what the
 * live overview feed sends (`overview`, all panels computed from the rollup tables, see
 * docs/analytics.md; `viewers` when only the live count changed).
 */
export async function analyticsLiveRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  const streams = new Set<ServerResponse>();
  // Open streams would hold the server open: end them when it closes.
  app.addHook('preClose', async () => {
    for (const stream of streams) stream.end();
  });

  app.get(
    '/v1/analytics/live',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'Live dashboard updates (Server-Sent Events: `overview`, `viewers`)',
        description:
          'The filters of GET /v1/analytics/overview. A range whose start is not before its end, or a `from` at or after now without `to`, is refused with 400 `invalid_range` before the stream opens. The live viewer count (`viewers.live`, `viewers`) is, in cluster mode, only the sockets of the node that answers (viewers connected to other nodes are not counted yet).',
        tags: ['Analytics'],
        security: ADMIN_SECURITY,
        operationId: 'streamLiveAnalytics',
        querystring: { type: 'object', additionalProperties: false, properties: EXPORT_FILTER_PARAMETERS },
        response: {
          200: {
            description: 'Server-Sent Events: `overview` (every panel, as GET /v1/analytics/overview answers) and `viewers` (`{live}`), until the client leaves',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...problems(400, 401, 429),
        },
      },
      // Parameters are validated by the export package so that each problem names its parameter.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const { filter } = parseExportQuery(request.query as ExportQueryParams, EXPORT_FILTER_NAMES, request.tenant.settings.timeZone);
      // Refused here, while a problem+json can still be answered (not once the stream is open).
      services.analytics.checkRange(filter);
      const tenant = request.tenant;
      reply.hijack();
      const stream = reply.raw;
      stream.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-request-id': request.id,
      });
      streams.add(stream);
      const send = (event: string, data: unknown) => stream.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      const stopFeed = services.liveOverview.watch({
        tenant,
        filter,
        send: (update) => send(update.event, update.data),
        gone: () => stream.writableEnded,
        failed: (error) => request.log.error({ err: error }, 'live update failed'),
      });
      const keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
      const stop = () => {
        stopFeed();
        clearInterval(keepAlive);
        streams.delete(stream);
      };
      stream.on('close', stop);
    },
  );
}
