import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';

/**
 * Every operation of the OpenAPI document, against every way of not being the tenant that
 * owns the data: no credential, wrong or malformed tokens, the public API key where the
 * admin token belongs, a stale session cookie, a revoked token, and another tenant's token.
 * A new route that this file does not know fails the sweep until it is classified.
 */

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
interface Operation {
  method: Method;
  path: string;
}

/** Operations that take no credential at all (the dashboard login and logout). */
const PUBLIC = new Set(['POST /v1/session', 'DELETE /v1/session']);
/** Operations that take the public API key (`/v1/events` also takes an admin token). */
const API_KEY_ROUTES = new Set(['GET /v1/sdk/config', 'POST /v1/events']);

/** A valid body for each admin operation, so that only the credential stands between the caller and the data. */
const BODIES: Record<string, unknown> = {
  'PATCH /v1/settings': { theme: { primaryColor: '#123456' } },
  'POST /v1/api-keys': { name: 'intruder key' },
  'POST /v1/campaigns': { name: 'intruder campaign' },
  'PATCH /v1/campaigns/{id}': { name: 'renamed by intruder' },
  'POST /v1/sponsors': { name: 'intruder sponsor' },
  'PATCH /v1/sponsors/{id}': { name: 'renamed by intruder' },
  'POST /v1/broadcasts': { id: 'intruder-broadcast', campaignId: 1 },
  'PATCH /v1/broadcasts/{id}': { title: 'renamed by intruder' },
  'POST /v1/broadcasts/{id}/overlays': { type: 'poll', question: 'Intruder?', options: ['a', 'b'] },
  'PATCH /v1/broadcasts/{id}/overlays/{overlayId}': { type: 'poll', question: 'Changed by intruder?', options: ['a', 'b'] },
  'POST /v1/webhooks': { url: 'http://127.0.0.1:9/intruder' },
  'PATCH /v1/webhooks/{id}': { description: 'changed by intruder' },
  'POST /v1/webhooks/{id}/replay': { since: '2020-01-01T00:00:00Z' },
};

/** Names tenant B gives its objects; none of them ever appears in a URL that tenant A sends. */
const B_NAMES = {
  campaign: 'Campaign Of Tenant Bee',
  sponsor: 'Sponsor Of Tenant Bee',
  broadcastTitle: 'Broadcast Of Tenant Bee',
  question: 'Question Of Tenant Bee?',
  webhookDescription: 'Hook Of Tenant Bee',
  keyName: 'Key Of Tenant Bee',
  rejectedMarker: 'rejected-of-tenant-bee',
  userId: 'viewer-of-tenant-bee',
};

describe('auth sweep over the OpenAPI document', () => {
  let t: TestApp;
  let operations: Operation[];
  /** Tenant B's object ids, by path parameter. */
  const b: Record<string, string> = {};
  /** Strings that only tenant B's data contains. */
  let bSecrets: string[];
  let revokedToken: string;
  let bEventCount: number;

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const key = (op: Operation) => `${op.method} ${op.path}`;

  async function asB(method: Method, url: string, payload?: unknown): Promise<LightMyRequestResponse> {
    const response = await t.app.inject({ method, url, headers: bearer(t.other.adminToken), ...(payload === undefined ? {} : { payload: payload as object }) });
    expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    return response;
  }

  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true } });
    const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => ({ method: m.toUpperCase() as Method, path })));

    // Tenant B's world: one of everything.
    const campaign = (await asB('POST', '/v1/campaigns', { id: 424242, name: B_NAMES.campaign })).json();
    b.campaign = String(campaign.id);
    b.sponsor = (await asB('POST', '/v1/sponsors', { id: 'sponsor-b', name: B_NAMES.sponsor })).json().id;
    b.broadcast = (await asB('POST', '/v1/broadcasts', { id: 'broadcast-b', campaignId: campaign.id, title: B_NAMES.broadcastTitle })).json().id;
    b.overlay = (await asB('POST', `/v1/broadcasts/${b.broadcast}/overlays`, { type: 'poll', question: B_NAMES.question, options: ['x', 'y'] })).json().id;
    const webhook = (await asB('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/tenant-b', description: B_NAMES.webhookDescription })).json();
    b.webhook = webhook.id;
    const apiKey = (await asB('POST', '/v1/api-keys', { name: B_NAMES.keyName })).json();
    b.apiKey = apiKey.id;
    const events = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-svc-api-key': t.other.apiKey },
      payload: { events: [validEvent('poll.voted', new Date(), { userId: B_NAMES.userId, broadcastId: b.broadcast }), { event: 'nope', note: B_NAMES.rejectedMarker }] },
    });
    expect(events.json()).toMatchObject({ accepted: 1 });
    b.deletion = (await asB('DELETE', '/v1/users/someone-b/events')).json().id;
    await asB('POST', `/v1/webhooks/${b.webhook}/test`);
    const deliveries = (await asB('GET', `/v1/webhooks/${b.webhook}/deliveries`)).json().data as Array<{ id: string }>;
    b.delivery = deliveries[0]?.id ?? 'no-delivery';
    b.user = B_NAMES.userId;
    bSecrets = [
      ...Object.values(B_NAMES).filter((name) => name !== B_NAMES.userId),
      t.other.adminToken,
      t.other.apiKey,
      apiKey.key,
      webhook.secret,
    ];
    bEventCount = await t.services.storage.events.countEvents({ tenantSeq: t.other.seq });
    const revoked = await t.services.tenants.createAdminToken(t.demo.seq, 'revoked');
    await t.services.tenants.revokeAdminToken(t.demo.seq, revoked.record.id);
    revokedToken = revoked.token;
  });
  afterAll(() => t?.close());

  /** The URL of an operation, with tenant B's ids in its path. */
  function urlOf(op: Operation): string {
    const resource = op.path.split('/')[2]!;
    return op.path
      .replace('{overlayId}', b.overlay!)
      .replace('{deliveryId}', b.delivery!)
      .replace('{userId}', b.user!)
      .replace('{id}', { 'api-keys': b.apiKey, campaigns: b.campaign, sponsors: b.sponsor, broadcasts: b.broadcast, webhooks: b.webhook, deletions: b.deletion }[resource] ?? 'unknown');
  }

  function request(op: Operation, headers: Record<string, string>, url = urlOf(op)): InjectOptions {
    const body = BODIES[key(op)];
    return { method: op.method, url, headers, ...(body === undefined ? {} : { payload: body as object }) };
  }

  function expectNoDataOfB(response: LightMyRequestResponse, url: string, what: string): void {
    for (const secret of bSecrets) {
      if (url.includes(secret)) continue;
      expect(response.body.includes(secret), `${what} shows "${secret}"`).toBe(false);
    }
  }

  function expectProblem(response: LightMyRequestResponse, status: number, code: string, what: string): void {
    expect(response.statusCode, `${what}: ${response.body}`).toBe(status);
    expect(response.headers['content-type'], what).toMatch(/^application\/problem\+json/);
    expect(response.json().code, what).toBe(code);
  }

  it('knows how every operation is authenticated', () => {
    expect(operations.length).toBeGreaterThan(40);
    for (const op of operations) {
      if (PUBLIC.has(key(op)) || API_KEY_ROUTES.has(key(op))) continue;
      expect(op.path, key(op)).toMatch(/^\/v1\//);
      if (BODIES[key(op)] === undefined) expect(['GET', 'DELETE', 'POST'], `${key(op)} needs a body in BODIES`).toContain(op.method);
    }
  });

  it('refuses every admin operation without a valid admin credential of its own tenant', async () => {
    const attempts: Array<[string, Record<string, string>, string?]> = [
      ['no credential', {}],
      ['an unknown token', bearer(`svc_sk_${'Z'.repeat(32)}`)],
      ['a malformed bearer', { authorization: 'Bearer' }],
      ['a bearer with junk', { authorization: "Bearer ' OR 1=1 --" }],
      ['the API key as a bearer token', bearer(t.demo.apiKey)],
      ['the API key in its header', { 'x-svc-api-key': t.demo.apiKey }],
      ['the API key in the query', {}, `apiKey=${t.demo.apiKey}`],
      ['basic auth', { authorization: `Basic ${Buffer.from(`demo:${t.demo.adminToken}`).toString('base64')}` }],
      ['the admin token without "Bearer"', { authorization: t.demo.adminToken }],
      ['a made-up session cookie', { cookie: 'svc_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
      ['a revoked admin token', bearer(revokedToken)],
    ];
    let checked = 0;
    for (const op of operations) {
      if (PUBLIC.has(key(op)) || API_KEY_ROUTES.has(key(op))) continue;
      if (key(op) === 'GET /v1/session') continue; // answered below with the cookie
      for (const [what, headers, query] of attempts) {
        const url = urlOf(op) + (query ? `?${query}` : '');
        const response = await t.app.inject(request(op, headers, url));
        expectProblem(response, 401, 'unauthorized', `${key(op)} with ${what}`);
        expect(response.headers['www-authenticate'], `${key(op)} with ${what}`).toMatch(/^Bearer/);
        expectNoDataOfB(response, url, `${key(op)} with ${what}`);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(400);
  });

  it('refuses before reading the body: a broken body without a credential is still a 401', async () => {
    for (const op of operations) {
      if (op.method === 'GET' || PUBLIC.has(key(op)) || API_KEY_ROUTES.has(key(op))) continue;
      const response = await t.app.inject({ method: op.method, url: urlOf(op), headers: { 'content-type': 'application/json' }, payload: '{"broken' });
      expectProblem(response, 401, 'unauthorized', `${key(op)} with a broken body`);
    }
  });

  it("answers tenant A's token on tenant B's objects with 404, and shows A none of B's data", async () => {
    for (const op of operations) {
      if (PUBLIC.has(key(op)) || API_KEY_ROUTES.has(key(op)) || op.path === '/v1/analytics/live') continue;
      const url = urlOf(op);
      const response = await t.app.inject(request(op, bearer(t.demo.adminToken)));
      const what = `${key(op)} as tenant A`;
      expectNoDataOfB(response, url, what);
      expect(response.statusCode, `${what}: ${response.body}`).not.toBe(403);
      // Operations on one of B's objects must not find it. Deleting a userId's events is
      // scoped to the caller's tenant (a 202 that touches A only); lists answer A's data.
      const onBObject = /\{(id|overlayId|deliveryId)\}/.test(op.path) && !op.path.startsWith('/v1/users/');
      if (onBObject) expectProblem(response, 404, 'not_found', what);
      else expect(response.statusCode, `${what}: ${response.body}`).toBeLessThan(500);
    }
  });

  it("leaves every object of tenant B as it was after tenant A's attempts", async () => {
    expect((await asB('GET', `/v1/campaigns/${b.campaign}`)).json().name).toBe(B_NAMES.campaign);
    expect((await asB('GET', `/v1/sponsors/${b.sponsor}`)).json().name).toBe(B_NAMES.sponsor);
    expect((await asB('GET', `/v1/broadcasts/${b.broadcast}`)).json().title).toBe(B_NAMES.broadcastTitle);
    expect((await asB('GET', `/v1/broadcasts/${b.broadcast}/overlays/${b.overlay}`)).json()).toMatchObject({ question: B_NAMES.question, active: false });
    expect((await asB('GET', `/v1/webhooks/${b.webhook}`)).json()).toMatchObject({ description: B_NAMES.webhookDescription, enabled: true });
    expect((await asB('GET', `/v1/api-keys/${b.apiKey}`)).json().revokedAt).toBeNull();
    expect((await asB('GET', '/v1/settings')).json().theme.primaryColor).not.toBe('#123456');
    expect(await t.services.storage.events.countEvents({ tenantSeq: t.other.seq })).toBe(bEventCount);
    expect((await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.other.apiKey}` })).statusCode).toBe(200);
  });

  it("shows a dashboard session only its own tenant's data", async () => {
    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.adminToken } });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    expect((await t.app.inject({ url: '/v1/session', headers: { cookie } })).json().tenant).toBe('demo');
    for (const url of ['/v1/campaigns', '/v1/broadcasts', '/v1/webhooks', '/v1/rejected-events', '/v1/analytics/events', '/v1/api-keys', `/v1/webhooks/${b.webhook}/secret`]) {
      const response = await t.app.inject({ url, headers: { cookie } });
      expectNoDataOfB(response, url, `${url} with A's session`);
    }
    expect((await t.app.inject({ url: `/v1/webhooks/${b.webhook}/secret`, headers: { cookie } })).statusCode).toBe(404);
    expectProblem(await t.app.inject({ url: '/v1/session' }), 401, 'unauthorized', 'GET /v1/session without a cookie');
    expectProblem(await t.app.inject({ url: '/v1/session', headers: { cookie: 'svc_session=forged' } }), 401, 'unauthorized', 'GET /v1/session with a forged cookie');
  });

  it('refuses the public routes with a missing, unknown or admin-shaped API key', async () => {
    expectProblem(await t.app.inject({ url: '/v1/sdk/config' }), 400, 'api_key_missing', 'config without a key');
    expectProblem(await t.app.inject({ url: `/v1/sdk/config?apiKey=svc_pk_${'Z'.repeat(32)}` }), 401, 'invalid_api_key', 'config with an unknown key');
    // The admin token is no API key: it must not leak the tenant's config through the public route.
    expectProblem(await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.demo.adminToken}` }), 401, 'invalid_api_key', 'config with the admin token');
    const event = validEvent('broadcast.joined', new Date());
    expectProblem(await t.app.inject({ method: 'POST', url: '/v1/events', payload: event }), 400, 'api_key_missing', 'events without a key');
    expectProblem(await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': 'svc_pk_nope' }, payload: event }), 401, 'invalid_api_key', 'events with an unknown key');
    expectProblem(await t.app.inject({ method: 'POST', url: '/v1/events', headers: bearer(`svc_sk_${'Z'.repeat(32)}`), payload: event }), 401, 'unauthorized', 'events with an unknown token');
    expectProblem(await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.apiKey } }), 401, 'unauthorized', 'login with an API key');
  });
});
