import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './test-app';

/**
 * A page on another port of the same host (same site, so the SameSite=Strict session cookie
 * still goes along) posting to the service with the logged-in admin's cookie.
 */
describe('dashboard session cookies and other origins', () => {
  let t: TestApp;
  let cookie: string;
  let pollId: string;
  const ATTACKER = 'http://127.0.0.1:8666';
  const bearer = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  const active = async () => (await t.app.inject({ url: `/v1/broadcasts/live-show/overlays/${pollId}`, headers: bearer() })).json().active as boolean;

  beforeAll(async () => {
    t = await startTestApp({ listen: true });
    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.adminToken } });
    cookie = String(login.headers['set-cookie']).split(';')[0]!;
    await t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: bearer(), payload: { id: 1, name: 'Season' } });
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: bearer(), payload: { id: 'live-show', campaignId: 1 } });
    pollId = (await t.app.inject({ method: 'POST', url: '/v1/broadcasts/live-show/overlays', headers: bearer(), payload: { type: 'poll', question: 'Who wins?', options: ['A', 'B'] } })).json().id;
    expect((await t.app.inject({ method: 'POST', url: `/v1/broadcasts/live-show/overlays/${pollId}/show`, headers: bearer() })).statusCode).toBe(200);
  });
  afterAll(async () => t?.close());

  it('refuses to hide a live poll for a page on another port that posts text/plain with the cookie', async () => {
    for (const headers of [
      { cookie, origin: ATTACKER, 'content-type': 'text/plain' },
      { cookie, origin: ATTACKER, 'sec-fetch-site': 'same-site' },
      { cookie, origin: 'null' },
      { cookie },
    ]) {
      const response = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/live-show/overlays/${pollId}/hide`, headers, ...(headers['content-type'] ? { payload: '' } : {}) });
      expect(response.statusCode, JSON.stringify(headers)).toBe(403);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().code).toBe('cross_origin_request');
    }
    expect(await active()).toBe(true);
  });

  it('refuses every state-changing admin operation of the OpenAPI document when the cookie comes from elsewhere', async () => {
    const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json() as { paths: Record<string, Record<string, { security?: Array<Record<string, unknown>> }>> };
    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        // Operations for the admin token only (ingest takes the public key and never the cookie).
        if (method === 'get' || !operation.security?.length || !operation.security.every((s) => 'adminToken' in s)) continue;
        const url = path.replace(/\{[^}]+\}/g, 'x1');
        const response = await t.app.inject({ method: method.toUpperCase() as 'POST', url, headers: { cookie, origin: ATTACKER } });
        expect(response.statusCode, `${method} ${path}`).toBe(403);
        expect(response.json().code, `${method} ${path}`).toBe('cross_origin_request');
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(15);
  });

  it("still lets the dashboard's own pages act, and reads from anywhere", async () => {
    const hide = (headers: Record<string, string>) => t.app.inject({ method: 'POST', url: `/v1/broadcasts/live-show/overlays/${pollId}/hide`, headers: { cookie, ...headers } });
    expect((await hide({ origin: t.url })).statusCode).toBe(200);
    expect(await active()).toBe(false);
    expect((await t.app.inject({ method: 'POST', url: `/v1/broadcasts/live-show/overlays/${pollId}/show`, headers: { cookie, 'sec-fetch-site': 'same-origin' } })).statusCode).toBe(200);
    expect(await active()).toBe(true);
    // The Host the browser used (localhost instead of the configured address) is the service's origin too.
    const port = new URL(t.url).port;
    expect((await t.app.inject({ method: 'POST', url: `/v1/broadcasts/live-show/overlays/${pollId}/show`, headers: { cookie, host: `localhost:${port}`, origin: `http://localhost:${port}` } })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/v1/settings', headers: { cookie, origin: ATTACKER } })).statusCode).toBe(200);
  });

  it('leaves bearer-token calls alone, whatever their origin', async () => {
    const response = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/live-show/overlays/${pollId}/hide`, headers: { ...bearer(), origin: ATTACKER } });
    expect(response.statusCode).toBe(200);
    expect(await active()).toBe(false);
  });
});
