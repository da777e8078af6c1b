import type { FastifyInstance } from 'fastify';
import { SvcError } from '@svc/protocol';
import type { ApiKeyRecord } from '@svc/storage';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, OPTIONAL_BODY, problems } from '../schemas';
import type { Services } from '../services';

const apiKeySchema = {
  type: 'object',
  required: ['id', 'key', 'name', 'createdAt', 'revokedAt'],
  properties: {
    id: { type: 'string' },
    key: { type: 'string', description: 'The public key (svc_pk_…) to put in apps' },
    name: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    revokedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 64 } } } as const;

function view(record: ApiKeyRecord) {
  return {
    id: record.id,
    key: record.key,
    name: record.name,
    createdAt: new Date(record.createdAt).toISOString(),
    revokedAt: record.revokedAt === null ? null : new Date(record.revokedAt).toISOString(),
  };
}

export async function apiKeyRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  const common = { onRequest: guards.admin };
  const tags = ['API keys'];

  app.get(
    '/v1/api-keys',
    { ...common, schema: { summary: 'List API keys', operationId: 'listApiKeys', tags, security: ADMIN_SECURITY, response: { 200: { type: 'object', properties: { data: { type: 'array', items: apiKeySchema } } }, ...problems(401, 429) } } },
    async (request) => ({ data: (await services.tenants.listApiKeys(request.tenant.seq)).map(view) }),
  );

  app.post(
    '/v1/api-keys',
    {
      ...common,
      // The body is optional: an empty POST creates an unnamed key.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        summary: 'Create an API key',
        operationId: 'createApiKey',
        [OPTIONAL_BODY]: true,
        tags,
        security: ADMIN_SECURITY,
        body: { type: 'object', additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 200 } } },
        response: { 201: apiKeySchema, ...problems(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const name = (request.body as { name?: string } | undefined)?.name ?? 'unnamed';
      const record = await services.tenants.createApiKey(request.tenant.seq, name);
      return reply.code(201).header('location', `/v1/api-keys/${record.id}`).send(view(record));
    },
  );

  app.get(
    '/v1/api-keys/:id',
    { ...common, schema: { summary: 'One API key', operationId: 'getApiKey', tags, security: ADMIN_SECURITY, params: idParams, response: { 200: apiKeySchema, ...problems(401, 404, 429) } } },
    async (request) => {
      const { id } = request.params as { id: string };
      const record = (await services.tenants.listApiKeys(request.tenant.seq)).find((k) => k.id === id);
      if (!record) throw new SvcError('not_found', `No API key "${id}".`);
      return view(record);
    },
  );

  app.delete(
    '/v1/api-keys/:id',
    {
      ...common,
      schema: {
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key (config, ingest and new WebSocket connections refuse it at once; open connections last until they reconnect)',
        tags,
        security: ADMIN_SECURITY,
        params: idParams,
        response: { 200: apiKeySchema, ...problems(401, 404, 429) },
      },
    },
    async (request) => view(await services.tenants.revokeApiKey(request.tenant.seq, (request.params as { id: string }).id)),
  );
}
