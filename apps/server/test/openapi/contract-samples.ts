import type { FastifyInstance } from 'fastify';
import { validEvent } from '../events-fixture';

export interface Sample {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  url: string;
  /** The credential and other headers; the admin token when absent. */
  headers?: Record<string, string>;
  body?: unknown;
  /** The documented success status this sample must get. */
  status: number;
}

/** Objects of the test tenant that the samples act on; `spare…` ones are for the samples that delete. */
export interface Fixture {
  adminToken: string;
  apiKey: string;
  campaignId: number;
  sponsorId: string;
  broadcastId: string;
  overlayId: string;
  spareOverlayId: string;
  apiKeyId: string;
  spareApiKeyId: string;
  webhookId: string;
  spareWebhookId: string;
  deliveryId: string;
  deletionId: string;
}

/** Creates the objects of a `Fixture` through the API itself. */
export async function createFixture(app: FastifyInstance, adminToken: string, apiKey: string): Promise<Fixture> {
  const headers = { authorization: `Bearer ${adminToken}` };
  const call = async (method: 'POST' | 'GET' | 'DELETE', url: string, payload?: object) => {
    const response = await app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json();
  };
  const campaign = await call('POST', '/v1/campaigns', { name: 'Contract' });
  const sponsor = await call('POST', '/v1/sponsors', { id: 'contract-sponsor', name: 'Contract' });
  const broadcast = await call('POST', '/v1/broadcasts', { id: 'contract-broadcast', campaignId: campaign.id, title: 'Contract' });
  const poll = { type: 'poll', question: 'Who wins?', options: ['A', 'B'] };
  const overlay = await call('POST', `/v1/broadcasts/${broadcast.id}/overlays`, poll);
  const spareOverlay = await call('POST', `/v1/broadcasts/${broadcast.id}/overlays`, poll);
  const key = await call('POST', '/v1/api-keys', { name: 'contract' });
  const spareKey = await call('POST', '/v1/api-keys', { name: 'contract spare' });
  const webhook = await call('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/contract' });
  const spareWebhook = await call('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/contract-spare' });
  await call('POST', `/v1/webhooks/${webhook.id}/test`);
  const [delivery] = (await call('GET', `/v1/webhooks/${webhook.id}/deliveries`)).data as Array<{ id: string }>;
  const deletion = await call('DELETE', '/v1/users/contract-user/events');
  return {
    adminToken,
    apiKey,
    campaignId: campaign.id,
    sponsorId: sponsor.id,
    broadcastId: broadcast.id,
    overlayId: overlay.id,
    spareOverlayId: spareOverlay.id,
    apiKeyId: key.id,
    spareApiKeyId: spareKey.id,
    webhookId: webhook.id,
    spareWebhookId: spareWebhook.id,
    deliveryId: delivery!.id,
    deletionId: deletion.id,
  };
}

/**
 * One valid request per documented operation (a few have more), keyed `METHOD /path/{template}`,
 * in an order in which each finds what it needs. The live stream is sampled on its own.
 */
export function validSamples(f: Fixture): Array<[operation: string, sample: Sample]> {
  const key = { 'x-svc-api-key': f.apiKey };
  const b = `/v1/broadcasts/${f.broadcastId}`;
  const o = `${b}/overlays/${f.overlayId}`;
  const w = `/v1/webhooks/${f.webhookId}`;
  const poll = { type: 'poll', question: 'Who wins tonight?', options: ['A', 'B', 'C'] };
  const filter = `campaignId=${f.campaignId}&from=2026-01-01&to=2099-12-31T00:00:00Z&country=de&broadcastId=${f.broadcastId}`;
  return [
    ['GET /v1/sdk/config', { method: 'GET', url: '/v1/sdk/config', headers: key, status: 200 }],
    ['GET /v1/sdk/config', { method: 'GET', url: `/v1/sdk/config?apiKey=${f.apiKey}`, headers: {}, status: 200 }],
    ['GET /v1/sdk/config', { method: 'GET', url: '/v1/sdk/config', headers: { ...key, 'if-none-match': '*' }, status: 304 }],
    ['POST /v1/events', { method: 'POST', url: '/v1/events', headers: key, body: validEvent('poll.viewed', new Date(), { broadcastId: f.broadcastId }), status: 200 }],
    ['POST /v1/events', { method: 'POST', url: '/v1/events', body: { sentAt: new Date().toISOString(), events: [validEvent('checkout.completed', new Date()), validEvent('poll.voted', new Date())] }, status: 200 }],
    ['GET /v1/rejected-events', { method: 'GET', url: '/v1/rejected-events?limit=5', status: 200 }],
    ['GET /v1/settings', { method: 'GET', url: '/v1/settings', status: 200 }],
    ['PATCH /v1/settings', { method: 'PATCH', url: '/v1/settings', body: { theme: { primaryColor: '#123456' } }, status: 200 }],
    ['GET /v1/api-keys', { method: 'GET', url: '/v1/api-keys', status: 200 }],
    ['POST /v1/api-keys', { method: 'POST', url: '/v1/api-keys', body: { name: 'sample' }, status: 201 }],
    ['POST /v1/api-keys', { method: 'POST', url: '/v1/api-keys', status: 201 }],
    ['GET /v1/api-keys/{id}', { method: 'GET', url: `/v1/api-keys/${f.apiKeyId}`, status: 200 }],
    ['DELETE /v1/api-keys/{id}', { method: 'DELETE', url: `/v1/api-keys/${f.spareApiKeyId}`, status: 200 }],
    ['GET /v1/analytics/events', { method: 'GET', url: `/v1/analytics/events?${filter}&event=poll.viewed,poll.voted&limit=5`, status: 200 }],
    ['GET /v1/analytics/events', { method: 'GET', url: '/v1/analytics/events?format=ndjson', status: 200 }],
    ['GET /v1/analytics/events', { method: 'GET', url: '/v1/analytics/events?format=csv&event=poll.viewed', status: 200 }],
    ['GET /v1/analytics/events', { method: 'GET', url: '/v1/analytics/events', headers: { accept: 'text/csv', authorization: `Bearer ${f.adminToken}` }, status: 200 }],
    ['GET /v1/analytics/overview', { method: 'GET', url: `/v1/analytics/overview?${filter}&sponsorId=${f.sponsorId}`, status: 200 }],
    ['GET /v1/analytics/watching-now', { method: 'GET', url: '/v1/analytics/watching-now', status: 200 }],
    ['POST /v1/session', { method: 'POST', url: '/v1/session', headers: {}, body: { token: f.adminToken }, status: 200 }],
    ['GET /v1/session', { method: 'GET', url: '/v1/session', status: 200 }],
    ['DELETE /v1/session', { method: 'DELETE', url: '/v1/session', headers: {}, status: 204 }],
    ['DELETE /v1/users/{userId}/events', { method: 'DELETE', url: '/v1/users/sample-user/events', status: 202 }],
    ['GET /v1/deletions/{id}', { method: 'GET', url: `/v1/deletions/${f.deletionId}`, status: 200 }],
    ['POST /v1/campaigns', { method: 'POST', url: '/v1/campaigns', body: { name: 'Sample' }, status: 201 }],
    ['GET /v1/campaigns', { method: 'GET', url: '/v1/campaigns', status: 200 }],
    ['GET /v1/campaigns/{id}', { method: 'GET', url: `/v1/campaigns/${f.campaignId}`, status: 200 }],
    ['PATCH /v1/campaigns/{id}', { method: 'PATCH', url: `/v1/campaigns/${f.campaignId}`, body: { name: 'Renamed' }, status: 200 }],
    ['POST /v1/sponsors', { method: 'POST', url: '/v1/sponsors', body: { name: 'Sample' }, status: 201 }],
    ['GET /v1/sponsors', { method: 'GET', url: '/v1/sponsors', status: 200 }],
    ['GET /v1/sponsors/{id}', { method: 'GET', url: `/v1/sponsors/${f.sponsorId}`, status: 200 }],
    ['PATCH /v1/sponsors/{id}', { method: 'PATCH', url: `/v1/sponsors/${f.sponsorId}`, body: { name: 'Renamed' }, status: 200 }],
    ['POST /v1/broadcasts', { method: 'POST', url: '/v1/broadcasts', body: { id: 'sample-broadcast', campaignId: f.campaignId }, status: 201 }],
    ['GET /v1/broadcasts', { method: 'GET', url: '/v1/broadcasts', status: 200 }],
    ['GET /v1/broadcasts/{id}', { method: 'GET', url: b, status: 200 }],
    ['PATCH /v1/broadcasts/{id}', { method: 'PATCH', url: b, body: { title: null }, status: 200 }],
    ['POST /v1/broadcasts/{id}/overlays', { method: 'POST', url: `${b}/overlays`, body: { type: 'contest', title: 'Win a jersey' }, status: 201 }],
    ['GET /v1/broadcasts/{id}/overlays', { method: 'GET', url: `${b}/overlays`, status: 200 }],
    ['GET /v1/broadcasts/{id}/overlays/{overlayId}', { method: 'GET', url: o, status: 200 }],
    ['PATCH /v1/broadcasts/{id}/overlays/{overlayId}', { method: 'PATCH', url: o, body: poll, status: 200 }],
    ['POST /v1/broadcasts/{id}/overlays/{overlayId}/show', { method: 'POST', url: `${o}/show`, status: 200 }],
    ['POST /v1/broadcasts/{id}/overlays/{overlayId}/hide', { method: 'POST', url: `${o}/hide`, status: 200 }],
    ['DELETE /v1/broadcasts/{id}/overlays/{overlayId}', { method: 'DELETE', url: `${b}/overlays/${f.spareOverlayId}`, status: 204 }],
    ['POST /v1/webhooks', { method: 'POST', url: '/v1/webhooks', body: { url: 'http://127.0.0.1:9/sample', eventTypes: ['poll.voted'], description: null }, status: 201 }],
    ['GET /v1/webhooks', { method: 'GET', url: '/v1/webhooks', status: 200 }],
    ['GET /v1/webhooks/{id}', { method: 'GET', url: w, status: 200 }],
    ['PATCH /v1/webhooks/{id}', { method: 'PATCH', url: w, body: { description: 'sample' }, status: 200 }],
    ['DELETE /v1/webhooks/{id}', { method: 'DELETE', url: `/v1/webhooks/${f.spareWebhookId}`, status: 204 }],
    ['GET /v1/webhooks/{id}/secret', { method: 'GET', url: `${w}/secret`, status: 200 }],
    ['POST /v1/webhooks/{id}/rotate-secret', { method: 'POST', url: `${w}/rotate-secret`, status: 200 }],
    ['POST /v1/webhooks/{id}/test', { method: 'POST', url: `${w}/test`, status: 200 }],
    ['GET /v1/webhooks/{id}/deliveries', { method: 'GET', url: `${w}/deliveries?status=pending&limit=10`, status: 200 }],
    ['POST /v1/webhooks/{id}/deliveries/{deliveryId}/replay', { method: 'POST', url: `${w}/deliveries/${f.deliveryId}/replay`, status: 202 }],
    ['POST /v1/webhooks/{id}/replay', { method: 'POST', url: `${w}/replay`, body: { since: '2026-01-01T00:00:00Z' }, status: 202 }],
  ];
}
