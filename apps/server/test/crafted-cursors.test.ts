import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';

const b64 = (text: string) => Buffer.from(text).toString('base64url');
const unb64 = (cursor: string) => Buffer.from(cursor, 'base64url').toString();
const UUID = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

/** `<ms>|<uuid>` cursors as an attacker edits them: numbers past int64 and past any date, ids that only look like UUIDs. */
const TIME_ID_CURSORS = [
  b64(`99999999999999999999|${UUID}`),
  b64(`9223372036854775807|${UUID}`),
  b64(`9007199254740991|${UUID}`),
  b64(`-9007199254740991|${UUID}`),
  b64(`1|${'-'.repeat(36)}`),
  b64(`1|${'f'.repeat(36)}`),
  b64(`1e3|${UUID}`),
  b64(`1|${UUID}|x`),
  b64('|'),
  '%%%',
];

describe('crafted page cursors', () => {
  let t: TestApp;
  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });

  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true } });
    const hook = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin(), payload: { url: 'http://127.0.0.1:9/hook' } });
    expect(hook.statusCode).toBe(201);
    const now = new Date(t.services.clock.now());
    const events = [validEvent('poll.voted', now), validEvent('poll.voted', now), { event: 'nope.one' }, { event: 'nope.two' }];
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey }, payload: { events } });
  });
  afterAll(() => t.close());

  const expectRefused = async (url: string) => {
    const response = await t.app.inject({ url, headers: admin() });
    expect(response.statusCode, `${url}: ${response.body}`).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: '/query/cursor', code: 'invalid_value' }] });
  };

  it('answers 400 validation_failed to every crafted cursor of the webhook deliveries, never 500', async () => {
    const endpoints = (await t.app.inject({ url: '/v1/webhooks', headers: admin() })).json();
    const id = (endpoints.data ?? endpoints)[0].id as string;
    const page = (await t.app.inject({ url: `/v1/webhooks/${id}/deliveries?limit=1`, headers: admin() })).json();
    expect(page.nextCursor).toEqual(expect.any(String));
    expect((await t.app.inject({ url: `/v1/webhooks/${id}/deliveries?limit=1&cursor=${page.nextCursor}`, headers: admin() })).statusCode).toBe(200);
    for (const cursor of TIME_ID_CURSORS) await expectRefused(`/v1/webhooks/${id}/deliveries?cursor=${cursor}`);
  });

  it('answers 400 validation_failed to every crafted cursor of the rejected events, never 500', async () => {
    const page = (await t.app.inject({ url: '/v1/rejected-events?limit=1', headers: admin() })).json();
    expect(page.nextCursor).toEqual(expect.any(String));
    expect((await t.app.inject({ url: `/v1/rejected-events?limit=1&cursor=${page.nextCursor}`, headers: admin() })).statusCode).toBe(200);
    for (const cursor of TIME_ID_CURSORS) await expectRefused(`/v1/rejected-events?cursor=${cursor}`);
  });

  it('answers 400 validation_failed to every crafted cursor of the events export, never 500', async () => {
    const page = (await t.app.inject({ url: '/v1/analytics/events?format=json&limit=1', headers: admin() })).json();
    expect(page.nextCursor).toEqual(expect.any(String));
    const [ts, id, asOf, fingerprint] = JSON.parse(unb64(page.nextCursor)) as [number, string, number, string];
    const crafted = [
      [9007199254740991, id, asOf, fingerprint],
      [-9007199254740991, id, asOf, fingerprint],
      [ts, id, 9007199254740991, fingerprint],
      [ts, 'f'.repeat(36), asOf, fingerprint],
      [1e300, id, asOf, fingerprint],
    ].map((parts) => b64(JSON.stringify(parts)));
    for (const cursor of [...crafted, ...TIME_ID_CURSORS]) await expectRefused(`/v1/analytics/events?format=json&cursor=${cursor}`);
  });
});
