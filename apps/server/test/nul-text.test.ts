import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../../packages/storage/test/postgres-server';
import { startTestApp, type TestApp } from './test-app';

const available = postgresAvailable();

/**
 * U+0000 in a name or an overlay's text: PostgreSQL cannot store it in text or jsonb (it
 * answered 500), so every backend refuses it in the bodies that become metadata, with a 400 that
 * says where. Events keep it: they are the viewers' data, stored as sent.
 */
describe.each([
  { storage: 'embedded', postgres: false },
  { storage: 'PostgreSQL metadata', postgres: true },
])('U+0000 in request bodies ($storage)', ({ postgres }) => {
  let server: PostgresServer | undefined;
  const apps: TestApp[] = [];
  beforeAll(async () => {
    if (postgres && available) server = await startPostgres();
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });
  afterAll(async () => {
    await server?.stop();
  });

  const start = async () => {
    const t = await startTestApp(postgres ? { postgres: server!.url } : { postgres: '' });
    apps.push(t);
    return t;
  };
  const admin = (t: TestApp, method: 'POST' | 'PATCH', url: string, payload: unknown) =>
    t.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${t.demo.adminToken}` } });

  it.skipIf(postgres && !available)('refuses it in names and overlay text with 400 invalid_body, and stores nothing', async () => {
    const t = await start();
    const campaign = await admin(t, 'POST', '/v1/campaigns', { name: 'Spring\u0000sale' });
    expect(campaign.statusCode).toBe(400);
    expect(campaign.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(campaign.json()).toMatchObject({ code: 'invalid_body', detail: expect.stringContaining('/name') });

    const sponsor = await admin(t, 'POST', '/v1/sponsors', { id: 'nul-sponsor', name: 'Acme\u0000' });
    expect(sponsor.statusCode).toBe(400);
    expect((await admin(t, 'POST', '/v1/sponsors', { id: 'nul-sponsor', name: 'Acme' })).statusCode).toBe(201);
    expect((await admin(t, 'PATCH', '/v1/sponsors/nul-sponsor', { name: 'Acme\u0000 2' })).statusCode).toBe(400);

    expect((await admin(t, 'POST', '/v1/broadcasts', { id: 'nul-room', campaignId: 1 })).statusCode).toBe(201);
    const overlay = await admin(t, 'POST', '/v1/broadcasts/nul-room/overlays', {
      type: 'poll',
      question: 'Who wins?',
      options: ['Home', 'Away\u0000'],
    });
    expect(overlay.statusCode).toBe(400);
    expect(overlay.json()).toMatchObject({ code: 'invalid_body', detail: expect.stringContaining('/options/1') });

    const listed = await t.app.inject({ method: 'GET', url: '/v1/campaigns', headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    expect(JSON.stringify(listed.json())).not.toContain('Spring');
    // The six characters \u0000 written as text are not the character.
    expect((await admin(t, 'POST', '/v1/campaigns', { name: 'Spring \\u0000 sale' })).statusCode).toBe(201);
  });

  it.skipIf(postgres && !available)('accepts events that carry it', async () => {
    const t = await start();
    const answer = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-svc-api-key': t.demo.apiKey },
      payload: {
        event: 'poll.voted',
        eventId: '0193a2b0-0000-7000-8000-000000000001',
        userId: null,
        sessionId: 'svc_nul00001',
        broadcastId: 'nul-room',
        timestamp: new Date().toISOString(),
        data: { pollId: 'p1', questionText: 'Who\u0000?', optionSelected: 'A', optionIndex: 0 },
      },
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toMatchObject({ accepted: 1 });
  });
});
