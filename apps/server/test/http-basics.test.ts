import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, SvcError } from '@svc/protocol';
import { startTestApp, type TestApp } from './test-app';

describe('HTTP basics', () => {
  let t: TestApp;
  afterEach(() => t.close());

  it('echoes a sane x-request-id and makes one up otherwise', async () => {
    t = await startTestApp();
    const echoed = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
    expect(echoed.headers['x-request-id']).toBe('abc-123');
    const replaced = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'bad id\twith spaces' } });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const onError = await t.app.inject({ url: '/nowhere' });
    expect(onError.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('answers unknown routes with a problem+json 404', async () => {
    t = await startTestApp();
    const response = await t.app.inject({ url: '/v1/nothing-here?apiKey=x' });
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.json()).toMatchObject({ code: 'not_found', status: 404, instance: '/v1/nothing-here' });
  });

  it('reports liveness and readiness', async () => {
    t = await startTestApp();
    expect((await t.app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await t.app.inject({ url: '/readyz' })).json()).toEqual({ status: 'ready' });
  });

  it('answers readiness 503 not_ready with its reason and Retry-After while the service is not ready', async () => {
    t = await startTestApp();
    t.services.ready = async () => {
      throw new SvcError('not_ready', 'The event pipeline is starting.');
    };
    const response = await t.app.inject({ url: '/readyz' });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toMatch(/^\d+$/);
    expect(response.json()).toMatchObject({ code: 'not_ready', detail: 'The event pipeline is starting.' });
  });

  it('publishes an OpenAPI 3.1 document covering every public route', async () => {
    t = await startTestApp();
    const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/v1/analytics/events',
        '/v1/analytics/live',
        '/v1/analytics/overview',
        '/v1/analytics/watching-now',
        '/v1/api-keys',
        '/v1/api-keys/{id}',
        '/v1/broadcasts',
        '/v1/broadcasts/{id}',
        '/v1/broadcasts/{id}/overlays',
        '/v1/broadcasts/{id}/overlays/{overlayId}',
        '/v1/broadcasts/{id}/overlays/{overlayId}/hide',
        '/v1/broadcasts/{id}/overlays/{overlayId}/show',
        '/v1/campaigns',
        '/v1/campaigns/{id}',
        '/v1/deletions/{id}',
        '/v1/events',
        '/v1/rejected-events',
        '/v1/sdk/config',
        '/v1/session',
        '/v1/settings',
        '/v1/sponsors',
        '/v1/sponsors/{id}',
        '/v1/users/{userId}/events',
        '/v1/webhooks',
        '/v1/webhooks/{id}',
        '/v1/webhooks/{id}/deliveries',
        '/v1/webhooks/{id}/deliveries/{deliveryId}/replay',
        '/v1/webhooks/{id}/replay',
        '/v1/webhooks/{id}/rotate-secret',
        '/v1/webhooks/{id}/secret',
        '/v1/webhooks/{id}/test',
      ].sort(),
    );
    expect(doc.paths['/v1/sdk/config'].get.responses['401']).toBeDefined();
    expect(doc.components.schemas.Problem).toBeDefined();
  });

  it('limits requests per address and per key, with Retry-After and RateLimit headers', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    t = await startTestApp({ clock, config: { rateLimit: { perKeyPerSecond: 1000, perIpPerSecond: 2, burstSeconds: 2 } } });
    const url = `/v1/sdk/config?apiKey=${t.demo.apiKey}`;
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await t.app.inject({ url })).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const limited = await t.app.inject({ url });
    expect(limited.json()).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.headers['ratelimit-limit']).toBe('4');
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    clock.advance(1000);
    expect((await t.app.inject({ url })).statusCode).toBe(200);
  });

  it('limits an IPv6 client by its /64: fresh addresses of the same block share one budget', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    t = await startTestApp({ clock, config: { rateLimit: { perKeyPerSecond: 1000, perIpPerSecond: 2, burstSeconds: 2 } } });
    const url = `/v1/sdk/config?apiKey=${t.demo.apiKey}`;
    const statuses = [];
    for (let i = 1; i <= 5; i++) statuses.push((await t.app.inject({ url, remoteAddress: `2001:db8:5:6::${i.toString(16)}` })).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    // Another /64 has its own budget.
    expect((await t.app.inject({ url, remoteAddress: '2001:db8:5:7::1' })).statusCode).toBe(200);
  });

  it('limits each API key on its own', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    t = await startTestApp({ clock, config: { rateLimit: { perKeyPerSecond: 1, perIpPerSecond: 0, burstSeconds: 2 } } });
    const demo = `/v1/sdk/config?apiKey=${t.demo.apiKey}`;
    expect((await t.app.inject({ url: demo })).statusCode).toBe(200);
    expect((await t.app.inject({ url: demo })).statusCode).toBe(200);
    expect((await t.app.inject({ url: demo })).statusCode).toBe(429);
    expect((await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.other.apiKey}` })).statusCode).toBe(200);
  });
});
