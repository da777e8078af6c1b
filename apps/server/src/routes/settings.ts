import type { FastifyInstance } from 'fastify';
import type { Tenant } from '@svc/storage';
import { SETTINGS_PATCH_SCHEMA, type SettingsPatch } from '@svc/tenancy';
import type { AuthGuards } from '../plugins/auth';
import { ADMIN_SECURITY, problems } from '../schemas';
import type { Services } from '../services';

const { properties } = SETTINGS_PATCH_SCHEMA;

const settingsSchema = {
  type: 'object',
  properties: {
    tenant: { type: 'string' },
    processingRegion: { type: 'string', description: 'Where events are processed (a deployment property)' },
    ...properties,
  },
} as const;

export async function settingsRoutes(app: FastifyInstance, { services, guards }: { services: Services; guards: AuthGuards }) {
  const view = (tenant: Tenant) => ({
    tenant: tenant.id,
    name: tenant.name,
    processingRegion: services.config.processingRegion,
    retentionMonths: tenant.retentionMonths,
    ...tenant.settings,
    timeZone: tenant.settings.timeZone ?? 'UTC',
  });

  app.get(
    '/v1/settings',
    {
      onRequest: guards.admin,
      schema: {
        summary: "The tenant's runtime configuration, markets and retention",
        operationId: 'getSettings',
        tags: ['Settings'],
        security: ADMIN_SECURITY,
        response: { 200: settingsSchema, ...problems(401, 429) },
      },
    },
    async (request) => view(request.tenant),
  );

  app.patch(
    '/v1/settings',
    {
      onRequest: guards.admin,
      schema: {
        summary: 'Change runtime configuration, markets or retention (nested objects are merged)',
        operationId: 'updateSettings',
        tags: ['Settings'],
        security: ADMIN_SECURITY,
        body: SETTINGS_PATCH_SCHEMA,
        response: { 200: settingsSchema, ...problems(400, 401, 415, 429) },
      },
    },
    async (request) => {
      const patch = request.body as SettingsPatch;
      // Broadcasts first seen in events join the default campaign: it must exist (an unchanged
      // value is accepted, so that what GET answered can be sent back as it is).
      if (patch.defaultCampaignId !== undefined && patch.defaultCampaignId !== request.tenant.settings.defaultCampaignId) {
        await services.content.requireCampaign(request.tenant, patch.defaultCampaignId, 'defaultCampaignId');
      }
      return view(await services.tenants.updateSettings(request.tenant, patch));
    },
  );
}
