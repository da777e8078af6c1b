import { afterEach, describe, expect, it } from 'vitest';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';

/** What a black-box client and an OpenAPI-driven fuzzer found at the edges of the HTTP surface. */
describe('robustness of the HTTP surface', () => {
  let t: TestApp;
  afterEach(async () => t?.close());
  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  const createPoll = async (broadcastId: string) => {
    await t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: admin(), payload: { id: 1, name: 'Season' } });
    expect((await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id: broadcastId, campaignId: 1 } })).statusCode).toBe(201);
    const poll = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${encodeURIComponent(broadcastId)}/overlays`, headers: admin(), payload: { type: 'poll', question: 'Who?', options: ['A', 'B'] } });
    expect(poll.statusCode).toBe(201);
    return poll.json().id as string;
  };

  it('treats an empty body sent as application/json as no body, over real HTTP', async () => {
    t = await startTestApp({ listen: true, config: { webhookAllowPrivate: true } });
    const pollId = await createPoll('show');
    const send = (method: string, path: string, contentType = 'application/json') =>
      fetch(`${t.url}${path}`, { method, body: '', headers: { ...admin(), 'content-type': contentType } });
    expect((await send('DELETE', '/v1/users/user-42/events')).status).toBe(202);
    expect((await send('POST', `/v1/broadcasts/show/overlays/${pollId}/show`)).status).toBe(200);
    expect((await send('POST', `/v1/broadcasts/show/overlays/${pollId}/hide`, 'application/json; charset=utf-8')).status).toBe(200);
    expect((await send('POST', `/v1/broadcasts/show/overlays/${pollId}/show`, 'text/plain')).status).toBe(200);
    const webhook = (await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin(), payload: { url: 'http://127.0.0.1:9/in' } })).json();
    expect((await send('POST', `/v1/webhooks/${webhook.id}/rotate-secret`)).status).toBe(200);
    const replay = await send('POST', `/v1/webhooks/${webhook.id}/deliveries/no-such-delivery/replay`);
    expect(replay.status).toBe(404);
    // A route that needs a body says what is missing, not that nothing is invalid JSON.
    const create = await send('POST', '/v1/campaigns');
    expect(create.status).toBe(400);
    expect((await create.json()).code).toBe('validation_failed');
    // A body that is there is still parsed.
    const broken = await fetch(`${t.url}/v1/campaigns`, { method: 'POST', body: '{"name":', headers: { ...admin(), 'content-type': 'application/json' } });
    expect((await broken.json()).code).toBe('invalid_json');
  });

  it('accepts ids of up to 128 characters in every URL that names them, so such a user can be erased', async () => {
    t = await startTestApp();
    // 128 characters, the last ones four UTF-8 bytes each (12 characters once percent-encoded).
    const userId = `${'u'.repeat(120)}${'😀'.repeat(8)}`;
    expect([...userId].length).toBe(128);
    const ingest = await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey }, payload: validEvent('broadcast.joined', new Date(), { userId }) });
    expect(ingest.json()).toMatchObject({ accepted: 1 });
    const erase = await t.app.inject({ method: 'DELETE', url: `/v1/users/${encodeURIComponent(userId)}/events`, headers: admin() });
    expect(erase.statusCode, erase.body).toBe(202);
    let job = erase.json();
    for (let i = 0; i < 100 && job.status !== 'completed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      job = (await t.app.inject({ url: `/v1/deletions/${job.id}`, headers: admin() })).json();
    }
    expect(job).toMatchObject({ status: 'completed', deletedEvents: 1 });

    const broadcastId = `b${'x'.repeat(100)}${'é'.repeat(27)}`;
    const pollId = await createPoll(broadcastId);
    const encoded = encodeURIComponent(broadcastId);
    expect((await t.app.inject({ url: `/v1/broadcasts/${encoded}`, headers: admin() })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${encoded}/overlays/${pollId}/show`, headers: admin() })).statusCode).toBe(200);
    const sponsorId = 's'.repeat(128);
    expect((await t.app.inject({ method: 'POST', url: '/v1/sponsors', headers: admin(), payload: { id: sponsorId, name: 'Long' } })).statusCode).toBe(201);
    expect((await t.app.inject({ url: `/v1/sponsors/${sponsorId}`, headers: admin() })).statusCode).toBe(200);

    // One character more is a validation error like in a body, not a 414.
    const tooLong = await t.app.inject({ method: 'DELETE', url: `/v1/users/${'u'.repeat(129)}/events`, headers: admin() });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json().code).toBe('validation_failed');
  });

  it('keeps allocating campaign ids after a campaign created with the largest id', async () => {
    t = await startTestApp();
    const create = (payload: object) => t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: admin(), payload });
    expect((await create({ id: Number.MAX_SAFE_INTEGER, name: 'Last' })).statusCode).toBe(201);
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await create({ name: `Automatic ${i}` });
      expect(response.statusCode, response.body).toBe(201);
      ids.push(response.json().id);
    }
    // Campaign 1 is the sample data's; the free ids after it are used, each a safe integer.
    expect(ids).toEqual([2, 3, 4]);
    const listed = (await t.app.inject({ url: '/v1/campaigns', headers: admin() })).json().data.map((c: { id: number }) => c.id);
    expect(listed).toEqual([1, 2, 3, 4, Number.MAX_SAFE_INTEGER]);
    // Below the largest id, automatic ids go on counting from it.
    await t.close();
    t = await startTestApp();
    expect((await create({ id: 41, name: 'Explicit' })).statusCode).toBe(201);
    expect((await create({ name: 'Next' })).json().id).toBe(42);
  });

  it('refuses body values of the wrong type instead of coercing them', async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true } });
    await t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: admin(), payload: { id: 1, name: 'Season' } });
    const broadcast = await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id: false, campaignId: 1 } });
    expect(broadcast.statusCode).toBe(400);
    expect(broadcast.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: '/id', code: 'invalid_type' }] });
    expect((await t.app.inject({ url: '/v1/broadcasts/false', headers: admin() })).statusCode).toBe(404);

    const flags = await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin(), payload: { featureFlags: { polls: 0 } } });
    expect(flags.statusCode).toBe(400);
    expect(flags.json().errors[0]).toMatchObject({ path: '/featureFlags/polls', code: 'invalid_type' });
    expect((await t.app.inject({ url: '/v1/settings', headers: admin() })).json().featureFlags.polls).toBe(true);
    for (const payload of [{ id: '7', name: 'Seven' }, { name: 7 }, { name: ['Seven'] }]) {
      expect((await t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: admin(), payload })).statusCode, JSON.stringify(payload)).toBe(400);
    }
    // URLs carry only text: path and query parameters are still read as their types.
    expect((await t.app.inject({ url: '/v1/campaigns/1', headers: admin() })).json().id).toBe(1);
    const webhook = (await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin(), payload: { url: 'http://127.0.0.1:9/in' } })).json();
    expect((await t.app.inject({ url: `/v1/webhooks/${webhook.id}/deliveries?limit=5`, headers: admin() })).statusCode).toBe(200);
  });

  it('answers every unsupported method on every known path with 405 and Allow', async () => {
    t = await startTestApp();
    const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      const url = path.replace(/\{[^}]+\}/g, 'x1');
      const documented = Object.keys(operations).map((m) => m.toUpperCase());
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !documented.includes(m))) {
        const response = await t.app.inject({ method: method as 'PUT', url, headers: admin() });
        expect(response.statusCode, `${method} ${path}`).toBe(405);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json().code).toBe('method_not_allowed');
        const allow = String(response.headers.allow).split(', ');
        expect(allow, `${method} ${path}`).toEqual(expect.arrayContaining(documented));
        expect(allow).not.toContain(method);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect((await t.app.inject({ method: 'PUT', url: '/v1/settings' })).headers.allow).toBe('GET, HEAD, OPTIONS, PATCH');
    expect((await t.app.inject({ method: 'PUT', url: '/v1/nothing-here' })).statusCode).toBe(404);
  });

  it('refuses a defaultCampaignId that names no campaign', async () => {
    t = await startTestApp();
    const patch = (defaultCampaignId: number) => t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin(), payload: { defaultCampaignId } });
    const refused = await patch(99);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: '/defaultCampaignId', code: 'invalid_value', message: 'is not a known campaign' }] });
    expect((await t.app.inject({ url: '/v1/settings', headers: admin() })).json().defaultCampaignId).toBe(1);
    await t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: admin(), payload: { id: 99, name: 'Ninety-nine' } });
    expect((await patch(99)).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/v1/settings', headers: admin() })).json().defaultCampaignId).toBe(99);
  });
});
