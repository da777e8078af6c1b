import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './test-app';

describe('GET /v1/sdk/config', () => {
  let t: TestApp;
  afterEach(() => t.close());

  const get = (query: string, headers: Record<string, string> = {}) =>
    t.app.inject({ url: `/v1/sdk/config${query}`, headers });

  it('answers every field of the runtime configuration with its documented type', async () => {
    t = await startTestApp({ config: { publicUrl: 'https://events.example.com' } });
    const response = await get(`?apiKey=${t.demo.apiKey}`);
    expect(response.statusCode).toBe(200);
    const config = response.json();
    expect(config.webSocketBaseURL).toBe('wss://events.example.com');
    expect(config.restAPIBaseURL).toBe('https://events.example.com');
    expect(config.theme.primaryColor).toMatch(/^#[0-9A-Fa-f]{6}$/);
    expect(config.commerceApiKey).toEqual(expect.any(String));
    for (const flag of ['lineup', 'payments', 'polls', 'contests', 'sponsorMoments']) {
      expect(typeof config.featureFlags[flag], flag).toBe('boolean');
    }
    expect(config.localization.defaultLanguage).toMatch(/^[a-z]{2}/);
    expect(config.availableMarkets.length).toBeGreaterThan(0);
    for (const market of config.availableMarkets) expect(market).toMatch(/^[A-Z]{2}$/);
    expect(config.country).toBeNull();
    expect(response.headers['cache-control']).toBe('private, max-age=300, stale-while-revalidate=86400');
    expect(response.headers['access-control-allow-origin']).toBe('*');
  });

  it('reflects settings changes at once, with a new ETag', async () => {
    t = await startTestApp();
    const before = await get(`?apiKey=${t.demo.apiKey}`);
    const patch = await t.app.inject({
      method: 'PATCH',
      url: '/v1/settings',
      headers: { authorization: `Bearer ${t.demo.adminToken}` },
      payload: { theme: { primaryColor: '#FF0066' }, featureFlags: { payments: false }, availableMarkets: ['DE', 'AT'] },
    });
    expect(patch.statusCode).toBe(200);
    const after = await get(`?apiKey=${t.demo.apiKey}`);
    expect(after.json()).toMatchObject({ theme: { primaryColor: '#FF0066' }, featureFlags: { payments: false, polls: true }, availableMarkets: ['DE', 'AT'] });
    expect(after.headers.etag).not.toBe(before.headers.etag);
  });

  it('answers 304 to a matching If-None-Match', async () => {
    t = await startTestApp();
    const first = await get(`?apiKey=${t.demo.apiKey}`);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await get(`?apiKey=${t.demo.apiKey}`, { 'if-none-match': `W/"other", ${etag}` });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(etag);
    expect((await get(`?apiKey=${t.demo.apiKey}`, { 'if-none-match': '"stale"' })).statusCode).toBe(200);
  });

  it('answers 400 api_key_missing and 401 invalid_api_key as problem+json', async () => {
    t = await startTestApp();
    const missing = await get('');
    expect(missing.statusCode).toBe(400);
    expect(missing.headers['content-type']).toContain('application/problem+json');
    expect(missing.json()).toMatchObject({ code: 'api_key_missing', status: 400, type: 'urn:svc:error:api_key_missing' });
    for (const key of ['nonsense', `svc_pk_${'Z'.repeat(32)}`, t.demo.adminToken]) {
      const invalid = await get(`?apiKey=${key}`);
      expect(invalid.statusCode).toBe(401);
      expect(invalid.json()).toMatchObject({ code: 'invalid_api_key' });
    }
  });

  it('refuses a revoked key', async () => {
    t = await startTestApp();
    const created = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: { name: 'ios' } });
    const { id, key } = created.json();
    expect((await get(`?apiKey=${key}`)).statusCode).toBe(200);
    await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${id}`, headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    const revoked = await get(`?apiKey=${key}`);
    expect(revoked.statusCode).toBe(401);
    expect(revoked.json().code).toBe('invalid_api_key');
  });

  it('takes the country from the trusted header first, then the address, then the fallback', async () => {
    t = await startTestApp({ config: { countryHeader: 'cf-ipcountry', trustProxy: true } });
    const url = `?apiKey=${t.demo.apiKey}`;
    expect((await get(url, { 'cf-ipcountry': 'it', 'x-forwarded-for': '8.8.8.8' })).json().country).toBe('IT');
    expect((await get(url, { 'x-forwarded-for': '8.8.8.8' })).json().country).toBe('US');
    expect((await get(url, { 'cf-ipcountry': 'XX', 'x-forwarded-for': '81.2.69.160' })).json().country).toBe('GB');
    expect((await get(url)).json().country).toBeNull();
    await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: { fallbackCountry: 'DE' } });
    expect((await get(url)).json().country).toBe('DE');
  });

  it('ignores an untrusted country header', async () => {
    t = await startTestApp();
    expect((await get(`?apiKey=${t.demo.apiKey}`, { 'cf-ipcountry': 'IT' })).json().country).toBeNull();
  });

  it('never writes the commerce key or credentials into the logs', async () => {
    t = await startTestApp();
    const config = (await get(`?apiKey=${t.demo.apiKey}`)).json();
    await t.app.inject({ url: '/v1/settings', headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    const logs = t.logs.join('');
    expect(logs).toContain('/v1/sdk/config');
    expect(logs).not.toContain(config.commerceApiKey);
    expect(logs).not.toContain(t.demo.adminToken);
    expect(logs).not.toContain(t.demo.apiKey);
  });
});
