import type { FastifyInstance } from 'fastify';
import { buildSdkConfig, sdkConfigEtag } from '@svc/tenancy';
import type { AuthGuards } from '../plugins/auth';
import { API_KEY_SECURITY, problems } from '../schemas';
import type { Services } from '../services';
import { viewerCountry } from '../viewer-country';

const CACHE_CONTROL = 'private, max-age=300, stale-while-revalidate=86400';

const sdkConfigSchema = {
  type: 'object',
  required: ['webSocketBaseURL', 'restAPIBaseURL', 'theme', 'commerceApiKey', 'featureFlags', 'localization', 'availableMarkets', 'country'],
  properties: {
    webSocketBaseURL: { type: 'string', description: 'Base of the WebSocket service (ws/wss)' },
    restAPIBaseURL: { type: 'string', description: 'Base of the REST API (http/https)' },
    theme: { type: 'object', required: ['primaryColor'], properties: { primaryColor: { type: 'string', pattern: '^#[0-9A-Fa-f]{6}$' } } },
    commerceApiKey: { type: 'string', description: 'Commerce credential delivered at run time' },
    featureFlags: {
      type: 'object',
      required: ['lineup', 'payments', 'polls', 'contests', 'sponsorMoments'],
      properties: {
        lineup: { type: 'boolean' },
        payments: { type: 'boolean' },
        polls: { type: 'boolean' },
        contests: { type: 'boolean' },
        sponsorMoments: { type: 'boolean' },
      },
    },
    localization: { type: 'object', required: ['defaultLanguage'], properties: { defaultLanguage: { type: 'string' } } },
    availableMarkets: { type: 'array', items: { type: 'string', pattern: '^[A-Z]{2}$' } },
    country: { type: ['string', 'null'], description: "The viewer's country (ISO 3166-1 alpha-2) or null" },
  },
} as const;

export async function sdkConfigRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  app.get(
    '/v1/sdk/config',
    {
      onRequest: guards.apiKey,
      schema: {
        summary: 'Runtime configuration for the SDK',
        tags: ['SDK'],
        operationId: 'getSdkConfig',
        security: API_KEY_SECURITY,
        querystring: { type: 'object', properties: { apiKey: { type: 'string', description: 'The public API key' } } },
        response: { 200: sdkConfigSchema, 304: { type: 'null', description: 'Not modified' }, ...problems(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const country = viewerCountry(request, services);
      const body = JSON.stringify(buildSdkConfig(request.tenant, services.config.publicUrl, country));
      const etag = sdkConfigEtag(body);
      reply.header('etag', etag).header('cache-control', CACHE_CONTROL);
      if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send();
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );
}

/** RFC 9110 weak comparison against an If-None-Match list. */
function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}
