import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './test-app';
import { ViewerPool, type Message } from './ws-client';

const REALTIME = { heartbeatIntervalMs: 150, resumeGraceMs: 300, throttleMs: 50 };
const LOGO = 'https://cdn.example/acme.svg';

/** Sponsor moments and products reach viewers with their sponsor's name and logo, as the sponsor record reads when pushed. */
describe('sponsor name and logo on overlays', () => {
  let t: TestApp;
  const viewers = new ViewerPool('fan');
  beforeEach(async () => {
    t = await startTestApp({ listen: true, config: { realtime: REALTIME } });
  });
  afterEach(async () => {
    viewers.terminateAll();
    await t.close();
  });

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: Record<string, unknown>) =>
    t.app.inject({ method, url, headers: admin(), ...(payload === undefined ? {} : { payload }) });
  const welcomed = (contentId: string) => viewers.welcomed(t.url, t.demo.apiKey, contentId);

  it('takes a logoUrl on create and update, with the rules of an overlay imageUrl', async () => {
    const created = await call('POST', '/v1/sponsors', { id: 'acme', name: 'Acme Sports', logoUrl: LOGO });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ id: 'acme', name: 'Acme Sports', logoUrl: LOGO });
    expect((await call('GET', '/v1/sponsors/acme')).json()).toMatchObject({ logoUrl: LOGO });

    for (const bad of ['javascript:alert(1)', 'ftp://cdn.example/logo.png', 'https://cdn.example/a logo.png', `https://cdn.example/${'x'.repeat(2_000)}`]) {
      const refused = await call('POST', '/v1/sponsors', { name: 'Bad', logoUrl: bad });
      expect(refused.statusCode, bad).toBe(400);
      expect(refused.json().code).toBe('validation_failed');
      expect((await call('PATCH', '/v1/sponsors/acme', { logoUrl: bad })).statusCode, bad).toBe(400);
    }
    const moved = await call('PATCH', '/v1/sponsors/acme', { logoUrl: 'http://cdn.example/acme-2.png' });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json()).toMatchObject({ name: 'Acme Sports', logoUrl: 'http://cdn.example/acme-2.png' });
    const removed = await call('PATCH', '/v1/sponsors/acme', { logoUrl: null });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json()).not.toHaveProperty('logoUrl');
    expect((await call('PATCH', '/v1/sponsors/acme', {})).statusCode).toBe(400);
    // A sponsor without a logo is still created as before.
    expect((await call('POST', '/v1/sponsors', { id: 'plain', name: 'Plain' })).json()).not.toHaveProperty('logoUrl');
  });

  it('pushes sponsor moments and products with { id, name, logoUrl } of their sponsor; a renamed sponsor shows its new name on the next show', async () => {
    await call('POST', '/v1/sponsors', { id: 'acme', name: 'Acme Sports', logoUrl: LOGO });
    await call('POST', '/v1/broadcasts', { id: 'sponsored', campaignId: 1 });
    const moment = (await call('POST', '/v1/broadcasts/sponsored/overlays', { type: 'sponsor_moment', sponsorId: 'acme', message: 'Half-time by Acme' })).json();
    const product = (await call('POST', '/v1/broadcasts/sponsored/overlays', { type: 'product', name: 'Jersey', price: 79.9, currency: 'EUR', placement: 'carousel', sponsorId: 'acme' })).json();
    const unsponsored = (await call('POST', '/v1/broadcasts/sponsored/overlays', { type: 'product', name: 'Scarf', price: 20, currency: 'EUR', placement: 'carousel' })).json();
    const sponsor = { id: 'acme', name: 'Acme Sports', logoUrl: LOGO };
    expect(moment.sponsor).toEqual(sponsor);
    expect((await call('GET', `/v1/broadcasts/sponsored/overlays/${product.id}`)).json().sponsor).toEqual(sponsor);
    expect(unsponsored).not.toHaveProperty('sponsor');

    await call('POST', `/v1/broadcasts/sponsored/overlays/${moment.id}/show`);
    const viewer = await welcomed('sponsored');
    expect((viewer.ofType('welcome')[0]!.overlays as Message[]).map((o) => o.sponsor)).toEqual([sponsor]);
    await call('POST', `/v1/broadcasts/sponsored/overlays/${product.id}/show`);
    expect((await viewer.next((m) => m.type === 'overlay.show')).overlay).toMatchObject({ id: product.id, sponsor });
    await call('POST', `/v1/broadcasts/sponsored/overlays/${unsponsored.id}/show`);
    expect((await viewer.next((m) => m.type === 'overlay.show' && (m.overlay as Message).id === unsponsored.id)).overlay).not.toHaveProperty('sponsor');

    await call('PATCH', '/v1/sponsors/acme', { name: 'Acme Outdoor', logoUrl: null });
    await call('POST', `/v1/broadcasts/sponsored/overlays/${moment.id}/hide`);
    await call('POST', `/v1/broadcasts/sponsored/overlays/${moment.id}/show`);
    const reshown = await viewer.next((m) => m.type === 'overlay.show' && (m.overlay as Message).id === moment.id);
    expect((reshown.overlay as Message).sponsor).toEqual({ id: 'acme', name: 'Acme Outdoor' });
    await call('PATCH', `/v1/broadcasts/sponsored/overlays/${product.id}`, { name: 'Jersey', price: 69.9, currency: 'EUR', placement: 'carousel', sponsorId: 'acme' });
    const updated = await viewer.next((m) => m.type === 'overlay.update');
    expect(updated.overlay).toMatchObject({ id: product.id, price: 69.9, sponsor: { id: 'acme', name: 'Acme Outdoor' } });
    const listed = (await call('GET', '/v1/broadcasts/sponsored/overlays')).json().data as Message[];
    expect(listed.map((o) => (o.sponsor as Message | undefined)?.name)).toEqual(['Acme Outdoor', 'Acme Outdoor', undefined]);

    // A viewer who joins after the rename gets the room's overlays with the new name too.
    viewers.terminateAll();
    await new Promise((resolve) => setTimeout(resolve, REALTIME.resumeGraceMs + 300));
    const newcomer = await welcomed('sponsored');
    const names = (newcomer.ofType('welcome')[0]!.overlays as Message[]).map((o) => (o.sponsor as Message | undefined)?.name);
    expect(names).toEqual(['Acme Outdoor', 'Acme Outdoor', undefined]);
  });
});
