import type { FastifyInstance } from 'fastify';
import { ID_MAX_LENGTH, OVERLAY_SCHEMAS } from '@svc/protocol';
import type { BroadcastRecord, CampaignRecord, SponsorRecord } from '@svc/storage';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

const iso = (ms: number) => new Date(ms).toISOString();
const campaignView = (c: CampaignRecord) => ({ id: c.id, name: c.name, createdAt: iso(c.createdAt) });
const sponsorView = (s: SponsorRecord) => ({ id: s.id, name: s.name, ...(s.logoUrl === null ? {} : { logoUrl: s.logoUrl }), createdAt: iso(s.createdAt) });
const broadcastView = (b: BroadcastRecord) => ({ id: b.id, campaignId: b.campaignId, title: b.title, createdAt: iso(b.createdAt) });

const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
const textId = { type: 'string', minLength: 1, maxLength: ID_MAX_LENGTH, pattern: '^[^\\u0000-\\u001f\\u007f]+$' } as const;
const campaignSchema = { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' }, createdAt: { type: 'string' } } } as const;
const logoUrl = { type: 'string', maxLength: 2_000, pattern: '^https?://[^\\s]+$', description: "http(s) URL of the sponsor's logo, shown to viewers with its sponsor moments and products" } as const;
const sponsorSchema = { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, logoUrl: { type: 'string' }, createdAt: { type: 'string' } } } as const;
const broadcastSchema = {
  type: 'object',
  properties: { id: { type: 'string' }, campaignId: { type: 'integer' }, title: { type: ['string', 'null'] }, createdAt: { type: 'string' } },
} as const;
const overlaySchema = {
  type: 'object',
  additionalProperties: true,
  description: 'The overlay content plus id, broadcastId, active, createdAt, updatedAt, shownAt, and sponsor (sponsor moments and products with a known sponsorId)',
  properties: {
    shownAt: { type: ['string', 'null'], format: 'date-time', description: 'Server time the overlay was last shown; null if never' },
    sponsor: {
      type: 'object',
      description: 'The sponsor named by sponsorId, as its record reads now',
      properties: { id: { type: 'string' }, name: { type: 'string' }, logoUrl: { type: 'string' } },
    },
  },
} as const;
const list = (items: object) => ({ type: 'object', properties: { data: { type: 'array', items } } });

export async function contentRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  const { content } = services;
  const admin = { onRequest: guards.admin };
  const doc = (summary: string, tags: string[], extra: object = {}) => ({ summary, tags, security: ADMIN_SECURITY, ...extra });

  // Campaigns. Ids are stored as BIGINT; larger numbers are refused here, not by the database.
  const campaignId = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;
  const campaignParams = { type: 'object', required: ['id'], properties: { id: campaignId } } as const;
  app.post('/v1/campaigns', {
    ...admin,
    schema: doc('Create a campaign', ['Content'], { operationId: 'createCampaign',
      body: { type: 'object', additionalProperties: false, required: ['name'], properties: { id: campaignId, name } },
      response: { 201: campaignSchema, ...problems(400, 401, 409, 429) },
    }),
  }, async (request, reply) => reply.code(201).send(campaignView(await content.createCampaign(request.tenant, request.body as { id?: number; name: string }))));
  app.get('/v1/campaigns', { ...admin, schema: doc('List campaigns', ['Content'], { operationId: 'listCampaigns', response: { 200: list(campaignSchema), ...problems(401, 429) } }) },
    async (request) => ({ data: (await content.listCampaigns(request.tenant)).map(campaignView) }));
  app.get('/v1/campaigns/:id', { ...admin, schema: doc('One campaign', ['Content'], { operationId: 'getCampaign', params: campaignParams, response: { 200: campaignSchema, ...problems(401, 404, 429) } }) },
    async (request) => campaignView(await content.getCampaign(request.tenant, (request.params as { id: number }).id)));
  app.patch('/v1/campaigns/:id', {
    ...admin,
    schema: doc('Rename a campaign', ['Content'], { operationId: 'renameCampaign', params: campaignParams, body: { type: 'object', additionalProperties: false, required: ['name'], properties: { name } }, response: { 200: campaignSchema, ...problems(400, 401, 404, 429) } }),
  }, async (request) => campaignView(await content.renameCampaign(request.tenant, (request.params as { id: number }).id, (request.body as { name: string }).name)));

  // Sponsors
  const sponsorParams = { type: 'object', required: ['id'], properties: { id: textId } } as const;
  app.post('/v1/sponsors', {
    ...admin,
    schema: doc('Create a sponsor', ['Content'], { operationId: 'createSponsor',
      body: { type: 'object', additionalProperties: false, required: ['name'], properties: { id: textId, name, logoUrl } },
      response: { 201: sponsorSchema, ...problems(400, 401, 409, 429) },
    }),
  }, async (request, reply) => reply.code(201).send(sponsorView(await content.createSponsor(request.tenant, request.body as { id?: string; name: string; logoUrl?: string }))));
  app.get('/v1/sponsors', { ...admin, schema: doc('List sponsors', ['Content'], { operationId: 'listSponsors', response: { 200: list(sponsorSchema), ...problems(401, 429) } }) },
    async (request) => ({ data: (await content.listSponsors(request.tenant)).map(sponsorView) }));
  app.get('/v1/sponsors/:id', { ...admin, schema: doc('One sponsor', ['Content'], { operationId: 'getSponsor', params: sponsorParams, response: { 200: sponsorSchema, ...problems(401, 404, 429) } }) },
    async (request) => sponsorView(await content.getSponsor(request.tenant, (request.params as { id: string }).id)));
  app.patch('/v1/sponsors/:id', {
    ...admin,
    schema: doc('Rename a sponsor or change its logo (null removes it)', ['Content'], { operationId: 'renameSponsor', params: sponsorParams,
      body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { name, logoUrl: { ...logoUrl, type: ['string', 'null'] } } },
      response: { 200: sponsorSchema, ...problems(400, 401, 404, 429) },
    }),
  }, async (request) => sponsorView(await content.updateSponsor(request.tenant, (request.params as { id: string }).id, request.body as { name?: string; logoUrl?: string | null })));

  // Broadcasts
  const broadcastParams = { type: 'object', required: ['id'], properties: { id: textId } } as const;
  app.post('/v1/broadcasts', {
    ...admin,
    schema: doc('Register a broadcast (its id is the content id the SDK passes to setContent)', ['Content'], { operationId: 'createBroadcast',
      body: { type: 'object', additionalProperties: false, required: ['id', 'campaignId'], properties: { id: textId, campaignId, title: name } },
      response: { 201: broadcastSchema, ...problems(400, 401, 409, 429) },
    }),
  }, async (request, reply) => reply.code(201).send(broadcastView(await content.createBroadcast(request.tenant, request.body as { id: string; campaignId: number; title?: string }))));
  app.get('/v1/broadcasts', { ...admin, schema: doc('List broadcasts, newest first', ['Content'], { operationId: 'listBroadcasts', response: { 200: list(broadcastSchema), ...problems(401, 429) } }) },
    async (request) => ({ data: (await content.listBroadcasts(request.tenant)).map(broadcastView) }));
  app.get('/v1/broadcasts/:id', { ...admin, schema: doc('One broadcast', ['Content'], { operationId: 'getBroadcast', params: broadcastParams, response: { 200: broadcastSchema, ...problems(401, 404, 429) } }) },
    async (request) => broadcastView(await content.getBroadcast(request.tenant, (request.params as { id: string }).id)));
  app.patch('/v1/broadcasts/:id', {
    ...admin,
    schema: doc('Change a broadcast\'s campaign or title', ['Content'], { operationId: 'updateBroadcast',
      params: broadcastParams,
      body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { campaignId, title: { type: ['string', 'null'], maxLength: 200 } } },
      response: { 200: broadcastSchema, ...problems(400, 401, 404, 429) },
    }),
  }, async (request) => broadcastView(await content.updateBroadcast(request.tenant, (request.params as { id: string }).id, request.body as { campaignId?: number; title?: string | null })));

  // Overlays
  const overlayParams = { type: 'object', required: ['id', 'overlayId'], properties: { id: textId, overlayId: { type: 'string', maxLength: 64 } } } as const;
  const overlayBodyDoc = { description: 'One overlay; the schema depends on `type`', oneOf: Object.values(OVERLAY_SCHEMAS) };
  // Overlay bodies are checked per type by the content service, so each error names its field;
  // unknown ids in the path answer 404 there too.
  const byService = { validatorCompiler: () => () => true };
  app.post('/v1/broadcasts/:id/overlays', {
    ...admin,
    ...byService,
    schema: doc('Create an overlay (inactive until shown)', ['Overlays'], { operationId: 'createOverlay', params: broadcastParams, body: overlayBodyDoc, response: { 201: overlaySchema, ...problems(400, 401, 404, 429) } }),
  }, async (request, reply) => reply.code(201).send(await content.createOverlay(request.tenant, (request.params as { id: string }).id, request.body)));
  app.get('/v1/broadcasts/:id/overlays', { ...admin, schema: doc('List the overlays of a broadcast', ['Overlays'], { operationId: 'listOverlays', params: broadcastParams, response: { 200: list(overlaySchema), ...problems(401, 404, 429) } }) },
    async (request) => ({ data: await content.listOverlays(request.tenant, (request.params as { id: string }).id) }));
  app.get('/v1/broadcasts/:id/overlays/:overlayId', { ...admin, schema: doc('One overlay', ['Overlays'], { operationId: 'getOverlay', params: overlayParams, response: { 200: overlaySchema, ...problems(401, 404, 429) } }) },
    async (request) => {
      const { id, overlayId } = request.params as { id: string; overlayId: string };
      return content.getOverlay(request.tenant, id, overlayId);
    });
  app.patch('/v1/broadcasts/:id/overlays/:overlayId', {
    ...admin,
    ...byService,
    schema: doc("Replace an overlay's content (same type); viewers see the change at once", ['Overlays'], { operationId: 'updateOverlay', params: overlayParams, body: overlayBodyDoc, response: { 200: overlaySchema, ...problems(400, 401, 404, 409, 429) } }),
  }, async (request) => {
    const { id, overlayId } = request.params as { id: string; overlayId: string };
    return content.updateOverlay(request.tenant, id, overlayId, request.body);
  });
  app.delete('/v1/broadcasts/:id/overlays/:overlayId', { ...admin, schema: doc('Delete an overlay (hidden first if shown)', ['Overlays'], { operationId: 'deleteOverlay', params: overlayParams, response: { 204: { type: 'null' }, ...problems(401, 404, 429) } }) },
    async (request, reply) => {
      const { id, overlayId } = request.params as { id: string; overlayId: string };
      await content.deleteOverlay(request.tenant, id, overlayId);
      return reply.code(204).send();
    });
  for (const action of ['show', 'hide'] as const) {
    app.post(`/v1/broadcasts/:id/overlays/:overlayId/${action}`, {
      ...admin,
      schema: doc(action === 'show' ? 'Show an overlay to every viewer of the broadcast' : 'Hide an overlay', ['Overlays'], {
        operationId: `${action}Overlay`,
        params: overlayParams,
        response: { 200: { type: 'object', properties: { id: { type: 'string' }, active: { type: 'boolean' } } }, ...problems(401, 404, 429) },
      }),
    }, async (request) => {
      const { id, overlayId } = request.params as { id: string; overlayId: string };
      const overlay = await content.setActive(request.tenant, id, overlayId, action === 'show');
      return { id: overlay.id, active: overlay.active };
    });
  }
}
