import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';

describe('tenant isolation', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp();
  });
  afterEach(() => t.close());

  const as = (token: string) => ({ authorization: `Bearer ${token}` });

  it("stores events under the key's tenant only", async () => {
    const event = validEvent('broadcast.joined', new Date(Date.now() - 1000));
    for (const apiKey of [t.demo.apiKey, t.other.apiKey]) {
      const response = await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': apiKey }, payload: event });
      // The same eventId is new for each tenant: dedupe is per tenant.
      expect(response.json()).toMatchObject({ accepted: 1 });
    }
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: as(t.other.adminToken), payload: validEvent('poll.viewed', new Date()) });
    expect(await t.services.storage.events.countEvents({ tenantSeq: t.demo.seq })).toBe(1);
    expect(await t.services.storage.events.countEvents({ tenantSeq: t.other.seq })).toBe(2);
  });

  it('shows each tenant its own settings, keys and rejects', async () => {
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey }, payload: { event: 'demo.only' } });
    await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: as(t.demo.adminToken), payload: { theme: { primaryColor: '#000001' } } });

    const otherSettings = (await t.app.inject({ url: '/v1/settings', headers: as(t.other.adminToken) })).json();
    expect(otherSettings.tenant).toBe('other');
    expect(otherSettings.theme.primaryColor).not.toBe('#000001');
    const otherConfig = (await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.other.apiKey}` })).json();
    expect(otherConfig.theme.primaryColor).not.toBe('#000001');

    const otherKeys = (await t.app.inject({ url: '/v1/api-keys', headers: as(t.other.adminToken) })).json().data;
    expect(otherKeys.map((k: { key: string }) => k.key)).toEqual([t.other.apiKey]);

    const otherRejects = (await t.app.inject({ url: '/v1/rejected-events', headers: as(t.other.adminToken) })).json().data;
    expect(otherRejects).toEqual([]);
    const demoRejects = (await t.app.inject({ url: '/v1/rejected-events', headers: as(t.demo.adminToken) })).json().data;
    expect(demoRejects).toHaveLength(1);
  });

  it("answers 404 for another tenant's key and leaves it working", async () => {
    const demoKeyId = (await t.app.inject({ url: '/v1/api-keys', headers: as(t.demo.adminToken) })).json().data[0].id;
    const read = await t.app.inject({ url: `/v1/api-keys/${demoKeyId}`, headers: as(t.other.adminToken) });
    expect(read.statusCode).toBe(404);
    expect(read.json().code).toBe('not_found');
    const revoke = await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${demoKeyId}`, headers: as(t.other.adminToken) });
    expect(revoke.statusCode).toBe(404);
    expect((await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.demo.apiKey}` })).statusCode).toBe(200);
  });

  it('refuses admin routes without a token, with a wrong token and with an API key', async () => {
    const routes: Array<[string, string]> = [
      ['GET', '/v1/settings'],
      ['PATCH', '/v1/settings'],
      ['GET', '/v1/api-keys'],
      ['POST', '/v1/api-keys'],
      ['GET', '/v1/api-keys/ak_x'],
      ['DELETE', '/v1/api-keys/ak_x'],
      ['GET', '/v1/rejected-events'],
    ];
    const attempts: Record<string, string>[] = [
      {},
      as(`svc_sk_${'W'.repeat(32)}`),
      as(t.demo.apiKey),
      { 'x-svc-api-key': t.demo.apiKey },
      { authorization: 'Basic abc' },
    ];
    for (const [method, url] of routes) {
      for (const headers of attempts) {
        const response = await t.app.inject({ method: method as 'GET', url, headers, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
        expect(response.statusCode, `${method} ${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(response.json().code).toBe('unauthorized');
      }
    }
  });

  it('refuses a revoked admin token', async () => {
    const { record, token } = await t.services.tenants.createAdminToken(t.demo.seq, 'temp');
    expect((await t.app.inject({ url: '/v1/settings', headers: as(token) })).statusCode).toBe(200);
    await t.services.tenants.revokeAdminToken(t.demo.seq, record.id);
    expect((await t.app.inject({ url: '/v1/settings', headers: as(token) })).statusCode).toBe(401);
  });
});

describe('admin API', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp();
  });
  afterEach(() => t.close());
  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });

  it('creates, lists, reads and revokes API keys', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: admin(), payload: { name: 'android' } });
    expect(created.statusCode).toBe(201);
    const key = created.json();
    expect(key).toMatchObject({ name: 'android', revokedAt: null });
    expect(key.key).toMatch(/^svc_pk_[0-9A-Za-z]{32}$/);
    expect(created.headers.location).toBe(`/v1/api-keys/${key.id}`);
    const bare = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: admin() });
    expect(bare.statusCode).toBe(201);
    const list = (await t.app.inject({ url: '/v1/api-keys', headers: admin() })).json().data;
    expect(list).toHaveLength(3);
    const revoked = (await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${key.id}`, headers: admin() })).json();
    expect(revoked.revokedAt).toEqual(expect.any(String));
    expect((await t.app.inject({ url: `/v1/api-keys/${key.id}`, headers: admin() })).json().revokedAt).toBe(revoked.revokedAt);
  });

  it('validates settings patches and names the bad field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ theme: { primaryColor: 'red' } }, '/theme/primaryColor'],
      [{ availableMarkets: ['de'] }, '/availableMarkets/0'],
      [{ retentionMonths: 0 }, '/retentionMonths'],
      [{ featureFlags: { polls: 'yes' } }, '/featureFlags/polls'],
      [{ surprise: 1 }, '/surprise'],
    ];
    for (const [payload, path] of cases) {
      const response = await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin(), payload: payload as object });
      expect(response.statusCode, path).toBe(400);
      expect(response.json()).toMatchObject({ code: 'validation_failed' });
      expect(response.json().errors.map((e: { path: string }) => e.path)).toContain(path);
    }
  });

  it('changes retention per tenant', async () => {
    const response = await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin(), payload: { retentionMonths: 24 } });
    expect(response.json().retentionMonths).toBe(24);
    expect((await t.services.tenants.getTenant('demo')).retentionMonths).toBe(24);
    expect((await t.services.tenants.getTenant('other')).retentionMonths).toBe(12);
  });
});
