import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { EXPORT_FILTER_PARAMETERS, EXPORT_PAGE_PARAMETERS, formatFromAccept, parseExportQuery, type ExportQueryParams } from '@svc/export';
import { CSV_COLUMNS, SvcError } from '@svc/protocol';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

const CONTENT_TYPES = { ndjson: 'application/x-ndjson; charset=utf-8', csv: 'text/csv; charset=utf-8; header=present' } as const;

/** One exported event: the stored event as tracked, plus what the service added. */
const exportedEventSchema = {
  type: 'object',
  required: ['eventId', 'event', 'timestamp', 'receivedAt'],
  additionalProperties: true,
  properties: { eventId: { type: 'string' }, event: { type: 'string' }, timestamp: { type: 'string', format: 'date-time' }, receivedAt: { type: 'string', format: 'date-time' } },
} as const;

export async function analyticsEventRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  app.get(
    '/v1/analytics/events',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'Raw export of every tracked event (JSON pages, NDJSON or CSV streams)',
        description:
          '`from`/`to` as calendar dates are inclusive UTC days; as date-times they form [from, to); without `to` there is no end (a `from` in the future answers no events). Order: timestamp, then eventId (JSON pages newest first with `order=desc`). ' +
          `Format by \`format\` or Accept (application/json, application/x-ndjson, text/csv). CSV columns: ${CSV_COLUMNS.join(', ')}. ` +
          'Send Accept-Encoding: gzip for a compressed stream.',
        tags: ['Export'],
        security: ADMIN_SECURITY,
        operationId: 'exportEvents',
        // `explode: false`: the one array parameter, `event`, is a comma list.
        querystring: { type: 'object', additionalProperties: false, explode: false, properties: { ...EXPORT_FILTER_PARAMETERS, ...EXPORT_PAGE_PARAMETERS } },
        response: {
          200: {
            description: 'A JSON page `{data, nextCursor}`, or an NDJSON or CSV stream of every matching event (`Content-Disposition: attachment`, `X-Total-Count`)',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['data', 'nextCursor'],
                  properties: { data: { type: 'array', items: exportedEventSchema }, nextCursor: { type: ['string', 'null'] } },
                },
              },
              'application/x-ndjson': { schema: { type: 'string', description: 'One exported event as JSON per line' } },
              'text/csv': { schema: { type: 'string', description: `RFC 4180 with a header row: ${CSV_COLUMNS.join(',')}` } },
            },
          },
          ...problems(400, 401, 406, 429),
        },
      },
      // Parameters are validated by the export package so that each problem names its parameter.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const query = parseExportQuery(request.query as ExportQueryParams);
      const format = query.format ?? formatFromAccept(request.headers.accept);
      if (!format) {
        throw new SvcError('unsupported_format', 'Accept application/json, application/x-ndjson or text/csv, or pass format=json|ndjson|csv.');
      }
      if (format === 'json') return services.exports.page(request.tenant, query);

      const asOfMs = services.exports.clock.now();
      const total = await services.exports.count(request.tenant, query, asOfMs);
      const stamp = new Date(asOfMs).toISOString().slice(0, 19).replace(/[-:]/g, '');
      reply
        .type(CONTENT_TYPES[format])
        .header('content-disposition', `attachment; filename="svc-events-${stamp}.${format}"`)
        .header('x-total-count', String(total));
      let body: NodeJS.ReadableStream = Readable.from(services.exports.stream(request.tenant, query, format, asOfMs));
      if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
        reply.header('content-encoding', 'gzip').header('vary', 'accept-encoding');
        body = body.pipe(createGzip());
      }
      return reply.send(body);
    },
  );
}
