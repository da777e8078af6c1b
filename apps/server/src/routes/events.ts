import type { FastifyInstance } from 'fastify';
import { anyEventSchema, parseClientJson } from '@svc/protocol';
import { MAX_EVENTS_PER_REQUEST, MAX_REQUEST_BYTES } from '@svc/ingest';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, API_KEY_SECURITY, problems } from '../schemas';
import type { Services } from '../services';
import { viewerCountry } from '../viewer-country';

const ingestResultSchema = {
  type: 'object',
  required: ['accepted', 'duplicates', 'rejected'],
  properties: {
    accepted: { type: 'integer', description: 'Events stored by this request' },
    duplicates: { type: 'integer', description: 'Events already stored earlier (same eventId); not stored again' },
    rejected: {
      type: 'array',
      description: 'Events refused, each kept in quarantine with its reason',
      items: {
        type: 'object',
        required: ['index', 'code', 'detail'],
        properties: {
          index: { type: 'integer' },
          code: { type: 'string' },
          detail: { type: 'string' },
          errors: {
            type: 'array',
            items: { type: 'object', properties: { path: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } } },
          },
        },
      },
    },
  },
} as const;

const bodySchema = {
  description: `One event, or a batch of at most ${MAX_EVENTS_PER_REQUEST} with the time the client sent it (used for clock-skew correction). Each event is validated on its own.`,
  oneOf: [
    anyEventSchema(),
    {
      type: 'object',
      required: ['events'],
      properties: { sentAt: { type: 'string', format: 'date-time' }, events: { type: 'array', maxItems: MAX_EVENTS_PER_REQUEST, items: anyEventSchema() } },
    },
  ],
};

export async function eventRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  // sendBeacon posts text/plain (no CORS preflight); its body is the same JSON, read by the same rule.
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseClientJson(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  app.post(
    '/v1/events',
    {
      bodyLimit: MAX_REQUEST_BYTES,
      onRequest: guards.apiKeyOrAdmin,
      // Each event is validated on its own, so that one bad event does not sink its batch.
      validatorCompiler: () => () => true,
      schema: {
        summary: 'Track events (SDK or server-to-server)',
        tags: ['Events'],
        operationId: 'trackEvents',
        security: [...API_KEY_SECURITY, ...ADMIN_SECURITY],
        body: bodySchema,
        response: { 200: ingestResultSchema, ...problems(400, 401, 413, 415, 429, 503) },
      },
    },
    async (request) => {
      const source = request.credentialKind === 'admin' ? 'server' : 'client';
      const length = Number(request.headers['content-length']);
      return services.ingest.ingest({
        tenant: request.tenant,
        source,
        // A customer server's address says nothing about its viewers.
        country: source === 'server' ? request.tenant.settings.fallbackCountry : viewerCountry(request, services),
        body: request.body,
        bodyBytes: Number.isFinite(length) ? length : MAX_REQUEST_BYTES,
      });
    },
  );
}
