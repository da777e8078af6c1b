import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { EXPORT_FILTER_NAMES, EXPORT_FILTER_PARAMETERS, parseExportQuery, type ExportQueryParams } from '@svc/export';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

/** How often a live stream checks for news; panels follow an accepted event within this. */
export const LIVE_TICK_MS = 250;
const KEEP_ALIVE_MS = 15_000;

/**
 * `GET /v1/analytics/live`: Server-Sent Events for the dashboard's live mode. `overview` (all
 * panels, computed from the rollup tables, see docs/analytics.md) is sent at once and again
 * within a tick of any stored event of the tenant, or as soon as the one in progress is sent;
 * `viewers` whenever the live count changes in between.
 */
export async function analyticsLiveRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  const watchers = new Map<number, Set<() => void>>();
  const streams = new Set<ServerResponse>();
  services.onEventsStored((tenantSeq) => {
    for (const markDirty of watchers.get(tenantSeq) ?? []) markDirty();
  });
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
      let dirty = true;
      let busy = false;
      let lastLive = -1;
      const markDirty = () => (dirty = true);
      let forTenant = watchers.get(tenant.seq);
      if (!forTenant) watchers.set(tenant.seq, (forTenant = new Set()));
      forTenant.add(markDirty);
      const tick = async () => {
        if (busy || stream.writableEnded) return;
        busy = true;
        try {
          if (dirty) {
            dirty = false;
            const overview = await services.analytics.overview(tenant, filter);
            lastLive = overview.viewers.live;
            send('overview', overview);
          } else {
            const live = await services.analytics.liveCount(tenant, filter);
            if (live !== lastLive) {
              lastLive = live;
              send('viewers', { live });
            }
          }
        } catch (error) {
          request.log.error({ err: error }, 'live update failed');
        } finally {
          busy = false;
        }
        // Events that came in meanwhile are sent at once, not a tick later.
        if (dirty && !stream.writableEnded) void tick();
      };
      const timer = setInterval(() => void tick(), LIVE_TICK_MS);
      const keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
      const stop = () => {
        clearInterval(timer);
        clearInterval(keepAlive);
        forTenant!.delete(markDirty);
        streams.delete(stream);
      };
      stream.on('close', stop);
      void tick();
    },
  );
}
