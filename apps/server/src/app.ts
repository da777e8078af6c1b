import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { ID_MAX_URL_SEGMENT_LENGTH } from '@svc/protocol';
import type { Gateway } from '@svc/realtime';
import { loggerOptions } from './logger';
import { createAuthGuards } from './plugins/auth';
import { documentCommonAnswers } from './plugins/common-answers';
import { registerEmptyBodyRule } from './plugins/empty-body';
import { clientErrorHandler, frameworkErrorHandler, registerProblemErrors } from './plugins/problem-errors';
import { registerSecurityHeaders } from './plugins/security-headers';
import { TokenBucketLimiter } from '@svc/protocol';
import { registerWellFormedJson } from './plugins/well-formed-json';
import { DashboardSessions } from './dashboard-sessions';
import { buildRequestValidator } from './request-validation';
import { sessionRoutes } from './routes/session';
import { analyticsLiveRoutes } from './routes/analytics-live';
import { analyticsEventRoutes } from './routes/analytics-events';
import { analyticsOverviewRoutes } from './routes/analytics-overview';
import { analyticsWatchingRoutes } from './routes/analytics-watching';
import { apiKeyRoutes } from './routes/api-keys';
import { contentRoutes } from './routes/content';
import { webhookRoutes } from './routes/webhooks';
import { sdkAssetRoutes } from './routes/sdk-assets';
import { demoRoutes } from './routes/demo';
import { deletionRoutes } from './routes/deletions';
import { attachGateway } from './realtime';
import { eventRoutes } from './routes/events';
import { healthRoutes } from './routes/health';
import { DashboardAssets } from './routes/dashboard-assets';
import { dashboardNotFoundPage, homeRoutes } from './routes/home';
import { rejectedEventRoutes } from './routes/rejected-events';
import { sdkConfigRoutes } from './routes/sdk-config';
import { settingsRoutes } from './routes/settings';
import { finishOpenApiDocument, problemSchema } from './schemas';
import { closeServices, type Services } from './services';

declare module 'fastify' {
  interface FastifyInstance {
    /** The WebSocket gateway on this app's server. */
    gateway: Gateway;
  }
}

export interface AppOptions {
  /** Where log lines go (default stdout); tests pass a stream to read them. */
  logStream?: DestinationStream;
  /** Close the services (commit queue, database) when the app closes. Default true. */
  ownsServices?: boolean;
}

/** Routes that browsers call from customers' pages, with the public key. */
const PUBLIC_CORS_ROUTES = new Set(['/v1/sdk/config', '/v1/events']);
const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;

/** The Fastify composition root: plugins, hooks and routes around the services. */
export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const { config } = services;
  const app = Fastify({
    logger: loggerOptions(config.logLevel, options.logStream),
    trustProxy: config.trustProxy,
    bodyLimit: 1024 * 1024,
    // Every id the API accepts (128 characters, any script) fits in a path segment.
    routerOptions: { maxParamLength: ID_MAX_URL_SEGMENT_LENGTH },
    requestIdHeader: false,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: true } },
    schemaController: { compilersFactory: { buildValidator: buildRequestValidator } },
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    services.metrics.httpSeconds.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unknown', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  if (options.ownsServices !== false) app.addHook('onClose', async () => closeServices(services));

  const dashboardAssets = new DashboardAssets();
  registerProblemErrors(app, { htmlNotFound: dashboardNotFoundPage(dashboardAssets, config) });
  registerEmptyBodyRule(app);
  registerWellFormedJson(app);
  await registerSecurityHeaders(app, config);
  app.addSchema(problemSchema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Svc API',
        version: '1.0.0',
        description:
          'Engagement and commerce events for live-stream broadcasts. Errors are RFC 9457 problem+json with a stable `code`. ' +
          'Before any route is chosen, a request may also be refused with 408 (it did not arrive in time) or 431 (headers too large), as problem+json on a closed connection.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: config.publicUrl }],
      components: {
        securitySchemes: {
          adminToken: { type: 'http', scheme: 'bearer', description: 'Secret admin token (svc_sk_…)' },
          apiKeyQuery: { type: 'apiKey', in: 'query', name: 'apiKey', description: 'Public API key (svc_pk_…)' },
          apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-svc-api-key', description: 'Public API key (svc_pk_…)' },
        },
      },
    },
    transformObject: (documentObject) => ('openapiObject' in documentObject ? finishOpenApiDocument(documentObject.openapiObject) : documentObject.swaggerObject),
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(cors, {
    hook: 'onRequest',
    delegator: (request, callback) => {
      const path = (request.url ?? '').split('?')[0] ?? '';
      // strictPreflight off: an OPTIONS request that is no preflight gets a plain answer, not a text/plain 400.
      callback(null, PUBLIC_CORS_ROUTES.has(path)
        ? { origin: '*', methods: ['GET', 'POST'], allowedHeaders: ['content-type', 'x-svc-api-key', 'if-none-match'], exposedHeaders: ['etag', 'x-request-id', 'retry-after'], maxAge: 86_400, strictPreflight: false }
        : { origin: false, strictPreflight: false });
    },
  });

  const limit = config.rateLimit;
  const limiters = {
    perKey: limit.perKeyPerSecond ? new TokenBucketLimiter(limit.perKeyPerSecond, limit.burstSeconds, services.clock) : null,
    perIp: limit.perIpPerSecond ? new TokenBucketLimiter(limit.perIpPerSecond, limit.burstSeconds, services.clock) : null,
  };
  const sessions = new DashboardSessions(services.storage.sessions, services.clock);
  const guards = createAuthGuards(services.tenants, limiters, sessions, () => config.publicUrl);
  documentCommonAnswers(app, (route) => {
    const hooks = [route.onRequest ?? []].flat();
    return {
      guarded: hooks.some((hook) => hook === guards.admin || hook === guards.apiKey || hook === guards.apiKeyOrAdmin),
      takesApiKey: hooks.some((hook) => hook === guards.apiKey || hook === guards.apiKeyOrAdmin),
      takesSessionCookie: hooks.includes(guards.admin),
    };
  });
  const deps = { services, guards, sessions, limiters };
  await app.register(healthRoutes, deps);
  await app.register(homeRoutes, { ...deps, dashboardAssets });
  await app.register(sdkConfigRoutes, deps);
  await app.register(eventRoutes, deps);
  await app.register(rejectedEventRoutes, deps);
  await app.register(settingsRoutes, deps);
  await app.register(apiKeyRoutes, deps);
  await app.register(analyticsEventRoutes, deps);
  await app.register(analyticsOverviewRoutes, deps);
  await app.register(analyticsLiveRoutes, deps);
  await app.register(analyticsWatchingRoutes, deps);
  await app.register(sessionRoutes, deps);
  await app.register(deletionRoutes, deps);
  await app.register(contentRoutes, deps);
  await app.register(webhookRoutes, deps);
  await app.register(sdkAssetRoutes);
  await app.register(demoRoutes, deps);
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // Once per event: it leaves `events` when set aside, so no reader meets it again.
  services.storage.onUndecodableEvents((events) => {
    for (const { tenantSeq, eventId } of events) {
      app.log.warn({ tenantSeq, eventId }, 'stored event set aside: its JSON text cannot be decoded (kept in undecodable_events)');
    }
  });
  app.decorate('gateway', attachGateway(app, services));
  return app;
}
