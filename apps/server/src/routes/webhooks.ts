import type { FastifyInstance } from 'fastify';
import { EVENT_NAMES } from '@svc/protocol';
import type { DeliveryRecord, DeliveryStatus, WebhookEndpointRecord } from '@svc/storage';
import type { EndpointInput } from '@svc/webhooks';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function endpointView(e: WebhookEndpointRecord, withSecret = false) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    eventTypes: e.eventTypes,
    enabled: e.enabled,
    disabledReason: e.disabledReason,
    failingSince: iso(e.failingSince),
    createdAt: iso(e.createdAt),
    updatedAt: iso(e.updatedAt),
    ...(withSecret ? { secret: e.secret } : {}),
    ...(withSecret && e.previousSecretExpiresAt ? { previousSecretExpiresAt: iso(e.previousSecretExpiresAt) } : {}),
  };
}

function deliveryView(d: DeliveryRecord) {
  return {
    id: d.id,
    eventId: d.eventId,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: iso(d.nextAttemptAt),
    lastAttemptAt: iso(d.lastAttemptAt),
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    lastLatencyMs: d.lastLatencyMs,
    createdAt: iso(d.createdAt),
    deliveredAt: iso(d.deliveredAt),
  };
}

const endpointSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    url: { type: 'string', format: 'uri' },
    description: { type: ['string', 'null'] },
    eventTypes: { type: ['array', 'null'], items: { type: 'string' } },
    enabled: { type: 'boolean' },
    disabledReason: { type: ['string', 'null'] },
    failingSince: { type: ['string', 'null'] },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
    secret: { type: 'string', description: 'Only on creation, rotation and explicit reveal' },
    previousSecretExpiresAt: { type: 'string' },
  },
} as const;
const deliverySchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    eventId: { type: 'string' },
    event: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
    attempts: { type: 'integer' },
    nextAttemptAt: { type: ['string', 'null'] },
    lastAttemptAt: { type: ['string', 'null'] },
    lastStatusCode: { type: ['integer', 'null'] },
    lastError: { type: ['string', 'null'] },
    lastLatencyMs: { type: ['integer', 'null'] },
    createdAt: { type: 'string' },
    deliveredAt: { type: ['string', 'null'] },
  },
} as const;
const endpointBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    url: { type: 'string', format: 'uri', minLength: 1, maxLength: 2_000, description: 'An absolute http(s) URL that does not point at a private or special-purpose address' },
    description: { type: ['string', 'null'], maxLength: 500 },
    eventTypes: { type: ['array', 'null'], maxItems: EVENT_NAMES.length, items: { type: 'string', enum: [...EVENT_NAMES] } },
    enabled: { type: 'boolean' },
  },
} as const;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 64 } } } as const;

export async function webhookRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  const { webhooks } = services;
  const admin = { onRequest: guards.admin };
  const doc = (summary: string, extra: object) => ({ summary, tags: ['Webhooks'], security: ADMIN_SECURITY, ...extra });
  const idOf = (request: { params: unknown }) => (request.params as { id: string }).id;

  app.post('/v1/webhooks', {
    ...admin,
    schema: doc('Add an endpoint; every accepted event (or those of `eventTypes`) is POSTed to it, signed (Standard Webhooks)', { operationId: 'createWebhook',
      body: { ...endpointBody, required: ['url'] },
      response: { 201: endpointSchema, ...problems(400, 401, 409, 429) },
    }),
  }, async (request, reply) => {
    const record = await webhooks.create(request.tenant, request.body as EndpointInput & { url: string });
    return reply.code(201).header('location', `/v1/webhooks/${record.id}`).send(endpointView(record, true));
  });

  app.get('/v1/webhooks', { ...admin, schema: doc('List endpoints', { operationId: 'listWebhooks', response: { 200: { type: 'object', properties: { data: { type: 'array', items: endpointSchema } } }, ...problems(401, 429) } }) },
    async (request) => ({ data: (await webhooks.list(request.tenant)).map((e) => endpointView(e)) }));

  app.get('/v1/webhooks/:id', { ...admin, schema: doc('One endpoint', { operationId: 'getWebhook', params: idParams, response: { 200: endpointSchema, ...problems(401, 404, 429) } }) },
    async (request) => endpointView(await webhooks.get(request.tenant, idOf(request))));

  app.patch('/v1/webhooks/:id', {
    ...admin,
    schema: doc('Change an endpoint: URL, description, event types, or enable/disable', { operationId: 'updateWebhook', params: idParams, body: { ...endpointBody, minProperties: 1 }, response: { 200: endpointSchema, ...problems(400, 401, 404, 429) } }),
  }, async (request) => endpointView(await webhooks.update(request.tenant, idOf(request), request.body as EndpointInput)));

  app.delete('/v1/webhooks/:id', { ...admin, schema: doc('Delete an endpoint and its pending deliveries', { operationId: 'deleteWebhook', params: idParams, response: { 204: { type: 'null' }, ...problems(401, 404, 429) } }) },
    async (request, reply) => {
      await webhooks.remove(request.tenant, idOf(request));
      return reply.code(204).send();
    });

  app.get('/v1/webhooks/:id/secret', { ...admin, schema: doc('Reveal the signing secret', { operationId: 'getWebhookSecret', params: idParams, response: { 200: endpointSchema, ...problems(401, 404, 429) } }) },
    async (request) => endpointView(await webhooks.get(request.tenant, idOf(request)), true));

  app.post('/v1/webhooks/:id/rotate-secret', {
    ...admin,
    schema: doc('New signing secret; the old one also signs for 24 h (two signatures per delivery)', { operationId: 'rotateWebhookSecret', params: idParams, response: { 200: endpointSchema, ...problems(401, 404, 429) } }),
  }, async (request) => endpointView(await webhooks.rotateSecret(request.tenant, idOf(request)), true));

  app.post('/v1/webhooks/:id/test', {
    ...admin,
    schema: doc('Send a signed test message now and report the answer', { operationId: 'testWebhook',
      params: idParams,
      response: {
        200: { type: 'object', properties: { id: { type: 'string' }, delivered: { type: 'boolean' }, statusCode: { type: ['integer', 'null'] }, error: { type: ['string', 'null'] }, latencyMs: { type: 'integer' } } },
        ...problems(401, 404, 429),
      },
    }),
  }, async (request) => {
    const result = await webhooks.sendTest(request.tenant, idOf(request));
    const delivered = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    return { id: result.id, delivered, statusCode: result.statusCode, error: result.error, latencyMs: result.latencyMs };
  });

  app.get('/v1/webhooks/:id/deliveries', {
    ...admin,
    schema: doc('Delivery log of an endpoint (30 days), newest first', { operationId: 'listWebhookDeliveries',
      params: idParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
          limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
          cursor: { type: 'string', maxLength: 200 },
        },
      },
      response: { 200: { type: 'object', properties: { data: { type: 'array', items: deliverySchema }, nextCursor: { type: ['string', 'null'] } } }, ...problems(400, 401, 404, 429) },
    }),
  }, async (request) => {
    const query = request.query as { status?: DeliveryStatus; limit: number; cursor?: string };
    const page = await webhooks.deliveries(request.tenant, idOf(request), query);
    return { data: page.data.map(deliveryView), nextCursor: page.nextCursor };
  });

  app.post('/v1/webhooks/:id/deliveries/:deliveryId/replay', {
    ...admin,
    schema: doc('Send one delivery again', { operationId: 'replayWebhookDelivery',
      params: { type: 'object', required: ['id', 'deliveryId'], properties: { id: { type: 'string', maxLength: 64 }, deliveryId: { type: 'string', maxLength: 64 } } },
      response: { 202: { type: 'object', properties: { queued: { type: 'integer' } } }, ...problems(401, 404, 409, 429) },
    }),
  }, async (request, reply) => {
    const { id, deliveryId } = request.params as { id: string; deliveryId: string };
    return reply.code(202).send({ queued: await webhooks.replay(request.tenant, id, { deliveryId }) });
  });

  app.post('/v1/webhooks/:id/replay', {
    ...admin,
    schema: doc('Send again every failed delivery created since a time', { operationId: 'replayFailedWebhookDeliveries',
      params: idParams,
      body: { type: 'object', additionalProperties: false, required: ['since'], properties: { since: { type: 'string', format: 'date-time' } } },
      response: { 202: { type: 'object', properties: { queued: { type: 'integer' } } }, ...problems(400, 401, 404, 409, 429) },
    }),
  }, async (request, reply) => {
    const since = Date.parse((request.body as { since: string }).since);
    return reply.code(202).send({ queued: await webhooks.replay(request.tenant, idOf(request), { failedSince: since }) });
  });
}
