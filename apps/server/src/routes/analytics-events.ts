import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { formatFromAccept, MAX_PAGE_LIMIT, parseExportQuery, type ExportQueryParams } from '@svc/export';
import { CSV_COLUMNS, EVENT_NAMES, SvcError } from '@svc/protocol';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

const CONTENT_TYPES = { ndjson: 'application/x-ndjson; charset=utf-8', csv: 'text/csv; charset=utf-8; header=present' } as const;

const str = (description: string) => ({ type: 'string', description });

export async function analyticsEventRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  app.get(
    '/v1/analytics/events',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'Raw export of every tracked event (JSON pages, NDJSON or CSV streams)',
        description:
          '`from`/`to` as calendar dates are inclusive UTC days; as date-times they form [from, to). Order: timestamp, then eventId. ' +
          `Format by \`format\` or Accept (application/json, application/x-ndjson, text/csv). CSV columns: ${CSV_COLUMNS.join(', ')}. ` +
          'Send Accept-Encoding: gzip for a compressed stream.',
        tags: ['Export'],
        security: ADMIN_SECURITY,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            campaignId: str('Campaign id (integer)'),
            from: str('Start: calendar date (inclusive) or date-time (inclusive)'),
            to: str('End: calendar date (inclusive) or date-time (exclusive)'),
            broadcastId: str('Broadcast id'),
            userId: str('Opaque user id'),
            sponsorId: str('Sponsor id (commerce events and sponsor moments)'),
            country: str('ISO 3166-1 alpha-2'),
            event: str(`Comma list of event names (${EVENT_NAMES.join(', ')})`),
            format: { type: 'string', enum: ['json', 'ndjson', 'csv'] },
            limit: str(`JSON page size, 1 to ${MAX_PAGE_LIMIT} (default 1000)`),
            cursor: str('The nextCursor of the previous JSON page'),
            csvSafe: { type: 'string', enum: ['true', 'false'], description: "CSV for spreadsheets: cells starting with =, +, -, @, tab or CR get a leading ' (default false: values exactly as stored)" },
          },
        },
        response: {
          200: {
            description: 'A JSON page `{data, nextCursor}`, or an NDJSON/CSV stream',
            type: 'object',
            properties: { data: { type: 'array', items: { type: 'object', additionalProperties: true } }, nextCursor: { type: ['string', 'null'] } },
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
