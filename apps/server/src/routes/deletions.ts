import type { FastifyInstance } from 'fastify';
import { USER_ID_MAX_LENGTH } from '@svc/protocol';
import type { DeletionJob } from '@svc/storage';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function view(job: DeletionJob) {
  return {
    id: job.id,
    status: job.status,
    requestedAt: iso(job.requestedAt),
    completedAt: iso(job.completedAt),
    purgedAt: iso(job.purgedAt),
    deletedEvents: job.deletedEvents,
    deletedRejectedEvents: job.deletedRejects,
    ...(job.error ? { error: job.error } : {}),
  };
}

const jobSchema = {
  type: 'object',
  required: ['id', 'status', 'requestedAt'],
  properties: {
    id: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'running', 'completed', 'failed'] },
    requestedAt: { type: 'string', format: 'date-time' },
    completedAt: { type: ['string', 'null'], format: 'date-time' },
    purgedAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description:
        "When no byte of the user's erased data (userId, events, payloads, webhook deliveries, quarantined rejects, rollups) was left in any file under the data folder. Null until then; at most SVC_ERASURE_MAX_DELAY_S (default 3600) after completedAt.",
    },
    deletedEvents: { type: ['integer', 'null'] },
    deletedRejectedEvents: { type: ['integer', 'null'] },
    error: { type: 'string' },
  },
} as const;

export async function deletionRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  app.delete(
    '/v1/users/:userId/events',
    {
      onRequest: guards.admin,
      schema: {
        summary: "Delete every event of one user (asynchronous job)",
        operationId: 'deleteUserEvents',
        description:
          "Removes the user's events, quarantined rejects, webhook deliveries (pending and logged) and rollup rows (`completedAt`); the user's open WebSocket sessions lose their userId first. The bytes of the erased data leave every file of the data folder by `purgedAt`, at most SVC_ERASURE_MAX_DELAY_S (default 3600) after `completedAt`. Idempotent: while a job for the user is unfinished, the same job is returned. The job keeps only a SHA-256 of the userId.",
        tags: ['Privacy'],
        security: ADMIN_SECURITY,
        params: { type: 'object', required: ['userId'], properties: { userId: { type: 'string', minLength: 1, maxLength: USER_ID_MAX_LENGTH } } },
        response: { 202: jobSchema, ...problems(400, 401, 429, 503) },
      },
    },
    async (request, reply) => {
      const job = await services.deletions.request(request.tenant, (request.params as { userId: string }).userId);
      return reply.code(202).header('location', `/v1/deletions/${job.id}`).send(view(job));
    },
  );

  app.get(
    '/v1/deletions/:id',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'Status of a deletion job',
        operationId: 'getDeletion',
        tags: ['Privacy'],
        security: ADMIN_SECURITY,
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 64 } } },
        response: { 200: jobSchema, ...problems(401, 404, 429) },
      },
    },
    async (request) => view(await services.deletions.get(request.tenant, (request.params as { id: string }).id)),
  );
}
