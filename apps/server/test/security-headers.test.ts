import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './test-app';

/** The CSP as a map of directive → sources. */
function csp(header: unknown): Map<string, string[]> {
  expect(typeof header, 'content-security-policy header').toBe('string');
  return new Map(
    String(header)
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter((words) => words[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}

const PAGES = ['/', '/events', '/broadcasts', '/rejected', '/settings', '/demo'];

describe('security headers', () => {
  let t: TestApp;
  afterEach(() => t?.close());

  it('gives the dashboard and demo pages a CSP with scripts from this origin only and no framing', async () => {
    t = await startTestApp();
    for (const url of PAGES) {
      const response = await t.app.inject({ url });
      expect(response.statusCode, url).toBe(200);
      const policy = csp(response.headers['content-security-policy']);
      expect(policy.get('script-src'), url).toEqual(["'self'"]);
      expect(policy.get('script-src-attr'), url).toEqual(["'none'"]);
      expect(policy.get('object-src'), url).toEqual(["'none'"]);
      expect(policy.get('base-uri'), url).toEqual(["'none'"]);
      expect(policy.get('frame-ancestors'), url).toEqual(["'none'"]);
      expect(policy.get('connect-src'), url).toContain("'self'");
      expect(response.headers['x-frame-options'], url).toBe('DENY');
      expect(response.headers['x-content-type-options'], url).toBe('nosniff');
      expect(response.headers['referrer-policy'], url).toBe('no-referrer');
      // The pages carry no inline script for the policy to block.
      expect(response.body, url).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
      expect(response.body, url).not.toMatch(/\son[a-z]+=/i);
    }
  });

  it('locks API answers, errors included, down to no content at all', async () => {
    t = await startTestApp();
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    const answers = [
      await t.app.inject({ url: '/v1/settings', headers: admin }),
      await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.demo.apiKey}` }),
      await t.app.inject({ url: '/v1/settings' }),
      await t.app.inject({ url: '/no/such/route' }),
      await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey, 'content-type': 'application/json' }, payload: '{' }),
      await t.app.inject({ url: '/healthz' }),
      await t.app.inject({ url: '/v1/openapi.json' }),
    ];
    for (const response of answers) {
      const what = `${response.statusCode} ${response.body.slice(0, 80)}`;
      const policy = csp(response.headers['content-security-policy']);
      expect(policy.get('default-src'), what).toEqual(["'none'"]);
      expect(policy.get('frame-ancestors'), what).toEqual(["'none'"]);
      expect(response.headers['x-content-type-options'], what).toBe('nosniff');
      expect(response.headers['x-frame-options'], what).toBe('DENY');
      expect(response.headers['referrer-policy'], what).toBe('no-referrer');
      expect(response.headers['strict-transport-security'], 'no HSTS over plain http').toBeUndefined();
    }
  });

  it('serves the scripts that customers embed to any origin, typed and not sniffable', async () => {
    t = await startTestApp();
    for (const url of ['/sdk/svc-core.js', '/sdk/svc-core.mjs', '/assets/dashboard.js', '/demo/demo.js']) {
      const response = await t.app.inject({ url });
      expect(response.statusCode, url).toBe(200);
      expect(response.headers['content-type'], url).toMatch(/^text\/javascript/);
      expect(response.headers['x-content-type-options'], url).toBe('nosniff');
    }
    const sdk = await t.app.inject({ url: '/sdk/svc-core.js', headers: { origin: 'https://shop.example' } });
    expect(sdk.headers['access-control-allow-origin']).toBe('*');
    expect(sdk.headers['cross-origin-resource-policy']).toBe('cross-origin');
    const dashboard = await t.app.inject({ url: '/assets/dashboard.js' });
    expect(dashboard.headers['cross-origin-resource-policy']).toBe('same-origin');
    expect(dashboard.headers['access-control-allow-origin']).toBeUndefined();
  }, 60_000);

  it('marks the session cookie HttpOnly and SameSite=Strict, not Secure over plain http', async () => {
    t = await startTestApp();
    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.adminToken } });
    const cookie = String(login.headers['set-cookie']);
    const attributes = cookie.split(';').slice(1).map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/']));
    expect(attributes).not.toContain('secure');
    const logout = await t.app.inject({ method: 'DELETE', url: '/v1/session', headers: { cookie: cookie.split(';')[0]! } });
    expect(String(logout.headers['set-cookie'])).toMatch(/Max-Age=0/);
  });

  it('adds HSTS and a Secure cookie when published over https', async () => {
    t = await startTestApp({ config: { publicUrl: 'https://svc.example.com' } });
    const page = await t.app.inject({ url: '/' });
    expect(page.headers['strict-transport-security']).toMatch(/max-age=31536000/);
    expect(csp(page.headers['content-security-policy']).get('connect-src')).toEqual(["'self'", 'https://svc.example.com', 'wss://svc.example.com']);
    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.adminToken } });
    expect(String(login.headers['set-cookie'])).toMatch(/; Secure/);
  });
});

describe('CORS', () => {
  let t: TestApp;
  afterEach(() => t?.close());
  const ORIGIN = 'https://shop.example';

  it('opens the public SDK routes to any origin, preflight included, without credentials', async () => {
    t = await startTestApp();
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: '/v1/events',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-svc-api-key' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(String(preflight.headers['access-control-allow-headers'])).toMatch(/x-svc-api-key/);
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();
    const config = await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.demo.apiKey}`, headers: { origin: ORIGIN } });
    expect(config.headers['access-control-allow-origin']).toBe('*');
    expect(String(config.headers['access-control-expose-headers'])).toMatch(/etag/);
    const events = await t.app.inject({ method: 'POST', url: `/v1/events?apiKey=${t.demo.apiKey}`, headers: { origin: ORIGIN, 'content-type': 'text/plain' }, payload: '{}' });
    expect(events.headers['access-control-allow-origin']).toBe('*');
  });

  it('gives no other route of the OpenAPI document to another origin', async () => {
    t = await startTestApp();
    const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      if (path === '/v1/sdk/config' || path === '/v1/events') continue;
      const url = path.replace(/\{[^}]+\}/g, 'x1');
      for (const method of Object.keys(operations)) {
        const preflight = await t.app.inject({
          method: 'OPTIONS',
          url,
          headers: { origin: ORIGIN, 'access-control-request-method': method.toUpperCase(), 'access-control-request-headers': 'authorization' },
        });
        expect(preflight.headers['access-control-allow-origin'], `OPTIONS ${url}`).toBeUndefined();
        expect(preflight.headers['access-control-allow-methods'], `OPTIONS ${url}`).toBeUndefined();
        // The live stream never ends; its preflight is what a browser would be refused.
        if (path === '/v1/analytics/live') continue;
        const actual = await t.app.inject({ method: method.toUpperCase() as 'GET', url, headers: { ...admin, origin: ORIGIN } });
        expect(actual.headers['access-control-allow-origin'], `${method} ${url}`).toBeUndefined();
        expect(actual.headers['access-control-allow-credentials'], `${method} ${url}`).toBeUndefined();
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(40);
  });
});
