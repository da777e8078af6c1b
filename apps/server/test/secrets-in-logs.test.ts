import { afterEach, describe, expect, it } from 'vitest';
import { startChildServer } from './child-server';
import { validEvent } from './events-fixture';
import { startTestApp, tempDataDir, type TestApp } from './test-app';
import { WebhookReceiver } from './webhook-receiver';
import { TestViewer } from './ws-client';

/** Every form of a secret that would give it away: itself and, for webhook secrets, the key bytes. */
function forms(secret: string): string[] {
  return secret.startsWith('whsec_') ? [secret, secret.slice('whsec_'.length)] : [secret];
}

function expectAbsent(logs: string, secrets: Record<string, string>): void {
  for (const [what, secret] of Object.entries(secrets)) {
    expect(secret.length, what).toBeGreaterThan(10);
    for (const form of forms(secret)) expect(logs.includes(form), `the logs contain ${what}`).toBe(false);
  }
}

describe('secrets never reach the logs', () => {
  let t: TestApp;
  let receiver: WebhookReceiver | null = null;
  afterEach(async () => {
    await receiver?.stop();
    await t?.close();
  });

  it('while API keys, admin tokens, webhook secrets, commerce keys and sessions are created and used, at trace level', async () => {
    t = await startTestApp({ listen: true, config: { logLevel: 'trace', webhookAllowPrivate: true } });
    receiver = await new WebhookReceiver().start();
    const secrets: Record<string, string> = { 'the bootstrap admin token': t.demo.adminToken, "the other tenant's admin token": t.other.adminToken };
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const admin = bearer(t.demo.adminToken);

    // Admin tokens: one made for the purpose, used, then revoked and tried again.
    const created = await t.services.tenants.createAdminToken(t.demo.seq, 'ci');
    secrets['a new admin token'] = created.token;
    expect((await t.app.inject({ url: '/v1/settings', headers: bearer(created.token) })).statusCode).toBe(200);
    await t.services.tenants.revokeAdminToken(t.demo.seq, created.record.id);
    expect((await t.app.inject({ url: '/v1/settings', headers: bearer(created.token) })).statusCode).toBe(401);
    // A token sent where it does not belong, in the query string and malformed.
    await t.app.inject({ url: `/v1/settings?token=${t.demo.adminToken}` });
    await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.demo.adminToken}` });
    await t.app.inject({ url: '/v1/settings', headers: { authorization: `Bearer ${t.demo.adminToken} extra` } });

    // API keys: created, used in the header, in the query (sendBeacon) and over the WebSocket.
    const apiKey = (await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: admin, payload: { name: 'web' } })).json();
    secrets['a new API key'] = apiKey.key;
    secrets['the bootstrap API key'] = t.demo.apiKey;
    await t.app.inject({ url: `/v1/sdk/config?apiKey=${apiKey.key}` });
    await t.app.inject({ method: 'POST', url: `/v1/events?apiKey=${apiKey.key}`, headers: { 'content-type': 'text/plain' }, payload: JSON.stringify(validEvent('broadcast.joined', new Date())) });
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': apiKey.key, 'content-type': 'application/json' }, payload: '{"broken' });
    const viewer = await TestViewer.connect(t.url, { apiKey: apiKey.key, sessionId: 'svc_logcheck', contentId: 'log-show' });
    await viewer.next((m) => m.type === 'welcome');
    viewer.ws.terminate();
    await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${apiKey.id}`, headers: admin });
    await t.app.inject({ url: `/v1/sdk/config?apiKey=${apiKey.key}` });

    // The commerce key: set in the settings, handed out in the SDK config.
    const commerceKey = 'ck_live_Q2xhc3NpZmllZENvbW1lcmNlS2V5';
    secrets['the commerce key'] = commerceKey;
    expect((await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin, payload: { commerceApiKey: commerceKey } })).statusCode).toBe(200);
    expect((await t.app.inject({ url: `/v1/sdk/config?apiKey=${t.demo.apiKey}` })).json().commerceApiKey).toBe(commerceKey);
    await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin, payload: { commerceApiKey: commerceKey, surprise: true } });

    // Webhook secrets: created, revealed, rotated, used to sign real deliveries (one refused).
    const webhook = (await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin, payload: { url: receiver.url } })).json();
    secrets['a webhook secret'] = webhook.secret;
    await t.app.inject({ url: `/v1/webhooks/${webhook.id}/secret`, headers: admin });
    const rotated = (await t.app.inject({ method: 'POST', url: `/v1/webhooks/${webhook.id}/rotate-secret`, headers: admin })).json();
    secrets['a rotated webhook secret'] = rotated.secret;
    let answered = 0;
    receiver.respond = (res) => res.writeHead(answered++ === 0 ? 500 : 200).end('no');
    await t.app.inject({ method: 'POST', url: `/v1/webhooks/${webhook.id}/test`, headers: admin });
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey }, payload: validEvent('poll.viewed', new Date()) });
    const deadline = Date.now() + 5_000;
    while (receiver.received.length < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(receiver.received.length).toBeGreaterThan(0);

    // Dashboard sessions: opened, used, closed, and the closed one tried again.
    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.adminToken } });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    secrets['a dashboard session id'] = cookie.split('=')[1]!;
    await t.app.inject({ url: '/v1/session', headers: { cookie } });
    await t.app.inject({ url: '/v1/analytics/overview', headers: { cookie } });
    await t.app.inject({ method: 'DELETE', url: '/v1/session', headers: { cookie } });
    await t.app.inject({ url: '/v1/session', headers: { cookie } });
    await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: `${t.demo.adminToken}x` } });

    const logs = t.logs.join('');
    // The capture works: requests were logged with their URLs, at the most verbose level.
    expect(t.app.log.level).toBe('trace');
    expect(logs).toContain('/v1/sdk/config');
    expect(logs).toContain('/v1/session');
    expectAbsent(logs, secrets);
  });

  it('masks credentials sent under other names, with encoded names, or anywhere in a URL or header', async () => {
    t = await startTestApp({ config: { logLevel: 'info' } });
    const token = t.demo.adminToken;
    const apiKey = t.demo.apiKey;
    const webhookSecret = `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}`;
    const encoded = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    const urls = [
      `/v1/settings?access_token=${token}`,
      `/v1/settings?authorization=Bearer%20${token}`,
      `/v1/settings?authorization=Bearer+${token}`,
      `/v1/sdk/config?%61piKey=${apiKey}`,
      `/v1/sdk/config?API%5FKEY=${apiKey}`,
      `/v1/settings?note=${encoded(token)}`,
      `/v1/settings?note=${encodeURIComponent(webhookSecret)}`,
      `/v1/settings?${token}`,
      `/v1/nowhere/${token}/${apiKey}`,
      `/v1/webhooks/${encodeURIComponent(webhookSecret)}`,
    ];
    for (const url of urls) await t.app.inject({ url });
    // Whatever a future log call writes: a header object with a token in an unexpected field.
    t.app.log.info({ headers: { 'x-forwarded-authorization': `Bearer ${token}`, 'x-note': webhookSecret } }, 'headers seen');
    const logs = t.logs.join('');
    expect(logs).toContain('/v1/settings?access_token=[redacted]');
    expect(logs).toContain('headers seen');
    expectAbsent(logs, { 'the admin token': token, 'the API key': apiKey, 'a webhook secret': webhookSecret });
    expect(logs.includes(encoded(token))).toBe(false);
  });

  it('masks userIds in request paths and query strings', async () => {
    t = await startTestApp({ config: { logLevel: 'info' } });
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    const userId = 'erased-viewer-4711@example';
    const deletion = await t.app.inject({ method: 'DELETE', url: `/v1/users/${encodeURIComponent(userId)}/events`, headers: admin });
    expect(deletion.statusCode).toBe(202);
    await t.app.inject({ url: `/v1/analytics/events?userId=${encodeURIComponent(userId)}`, headers: admin });
    await t.app.inject({ url: `/v1/analytics/events?format=csv&%75serId=${encodeURIComponent(userId)}`, headers: admin });
    await t.app.inject({ url: `/v1/users/${encodeURIComponent(userId)}/evnts`, headers: admin });
    const logs = t.logs.join('');
    expect(logs).toContain('/v1/users/[redacted]/events');
    expect(logs).toContain('/v1/analytics/events?userId=[redacted]');
    for (const form of [userId, encodeURIComponent(userId), 'erased-viewer-4711']) expect(logs.includes(form), form).toBe(false);
  });

  it('from a served process whose credentials come from the environment', async () => {
    const adminToken = `svc_sk_${'EnvToken'.padEnd(32, '7')}`;
    const apiKey = `svc_pk_${'EnvKey'.padEnd(32, '7')}`;
    const server = await startChildServer({ SVC_DATA_DIR: tempDataDir(), SVC_LOG_LEVEL: 'trace', SVC_BOOTSTRAP_ADMIN_TOKEN: adminToken, SVC_BOOTSTRAP_API_KEY: apiKey });
    try {
      expect((await fetch(`${server.url}/v1/settings`, { headers: { authorization: `Bearer ${adminToken}` } })).status).toBe(200);
      expect((await fetch(`${server.url}/v1/sdk/config?apiKey=${apiKey}`)).status).toBe(200);
      await fetch(`${server.url}/v1/settings?token=${adminToken}`);
    } finally {
      server.process.kill('SIGTERM');
      await server.exited;
    }
    const output = server.output();
    expect(output).toContain('/v1/settings');
    // The start-up banner names the (public) API key; the log lines never do.
    const logLines = output.split('\n').filter((line) => line.startsWith('{'));
    expect(logLines.length).toBeGreaterThan(2);
    expectAbsent(logLines.join('\n'), { 'the API key': apiKey });
    expectAbsent(output, { 'the admin token': adminToken });
  });
});
