import type { FastifyInstance } from 'fastify';
import { SvcError } from '@svc/protocol';
import { hashToken } from '@svc/tenancy';
import { SESSION_COOKIE, SESSION_TTL_MS, cookieValue, type DashboardSessions } from '../dashboard-sessions';
import type { AuthGuards, Limiters } from '../plugins/auth';
import { limitAddress } from '../plugins/auth';
import { ADMIN_SECURITY, NO_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

export async function sessionRoutes(
  app: FastifyInstance,
  { services, guards, sessions, limiters }: { services: Services; guards: AuthGuards; sessions: DashboardSessions; limiters: Limiters },
) {
  const secure = services.config.publicUrl.startsWith('https:');
  const cookie = (value: string, maxAgeSeconds: number) =>
    `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
  const sessionView = { type: 'object', properties: { tenant: { type: 'string' }, name: { type: 'string' } } } as const;

  app.post(
    '/v1/session',
    {
      schema: {
        summary: 'Dashboard login: exchanges an admin token for an HttpOnly session cookie',
        tags: ['Dashboard'],
        operationId: 'login',
        security: NO_SECURITY,
        body: { type: 'object', additionalProperties: false, required: ['token'], properties: { token: { type: 'string', maxLength: 200 } } },
        response: { 200: sessionView, ...problems(400, 401, 413, 415, 429, 503) },
      },
    },
    async (request, reply) => {
      // Guessing tokens costs the guesser's address its budget.
      limitAddress(request, reply, limiters);
      const { token } = request.body as { token: string };
      const tenant = await services.tenants.authenticateAdminToken(token);
      if (!tenant) throw new SvcError('unauthorized', 'That admin token is unknown or revoked.');
      const id = await sessions.open(tenant.seq, hashToken(token));
      return reply.header('set-cookie', cookie(id, SESSION_TTL_MS / 1000)).send({ tenant: tenant.id, name: tenant.name });
    },
  );

  app.get(
    '/v1/session',
    { onRequest: guards.admin, schema: { summary: 'Who is logged in', tags: ['Dashboard'], operationId: 'getSession', security: ADMIN_SECURITY, response: { 200: sessionView, ...problems(401) } } },
    async (request) => ({ tenant: request.tenant.id, name: request.tenant.name }),
  );

  app.delete(
    '/v1/session',
    { schema: { summary: 'Dashboard logout', tags: ['Dashboard'], operationId: 'logout', security: NO_SECURITY, response: { 204: { type: 'null', description: 'Logged out; the cookie is cleared' }, ...problems(503) } } },
    async (request, reply) => {
      const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
      if (id) await sessions.close(id);
      return reply.header('set-cookie', cookie('', 0)).code(204).send();
    },
  );
}
