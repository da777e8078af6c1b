import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { hashSessionSecret } from '@svc/storage';
import { hashToken } from '@svc/tenancy';
import { SESSION_TTL_MS } from '../src/dashboard-sessions';
import { startTestApp, type TestApp } from './test-app';

/** Logs in with `token` and returns the cookie to send back and the session secret it carries. */
async function login(t: TestApp, token: string): Promise<{ cookie: string; secret: string }> {
  const response = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token } });
  expect(response.statusCode).toBe(200);
  const cookie = String(response.headers['set-cookie']).split(';')[0]!;
  return { cookie, secret: cookie.slice('svc_session='.length) };
}

const whoAmI = (t: TestApp, cookie: string) => t.app.inject({ url: '/v1/session', headers: { cookie } });

describe('dashboard sessions in the session store', () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((t) => t.close()));
  });
  const start = async (options: Parameters<typeof startTestApp>[0] = {}) => {
    const t = await startTestApp(options);
    apps.push(t);
    return t;
  };

  it('keeps a session across a restart of the server, until logout', async () => {
    const first = await startTestApp();
    const { cookie } = await login(first, first.demo.adminToken);
    expect((await whoAmI(first, cookie)).statusCode).toBe(200);
    await first.close();

    const second = await start({ reopen: first });
    expect((await whoAmI(second, cookie)).json()).toEqual({ tenant: 'demo', name: 'Demo' });
    expect((await second.app.inject({ url: '/v1/settings', headers: { cookie } })).json().tenant).toBe('demo');
    expect((await second.app.inject({ method: 'DELETE', url: '/v1/session', headers: { cookie } })).statusCode).toBe(204);
    expect((await whoAmI(second, cookie)).statusCode).toBe(401);
  });

  it('stores the hash of the session secret with its tenant and token, never the secret', async () => {
    const t = await start();
    const { secret } = await login(t, t.demo.adminToken);
    expect(await t.services.storage.sessions.findSession(secret)).toBeNull();
    expect(await t.services.storage.sessions.findSession(hashSessionSecret(secret))).toMatchObject({
      tenantSeq: t.demo.seq,
      tokenHash: hashToken(t.demo.adminToken),
    });
  });

  it('refuses a session from the moment it expires and removes it; a later login purges those never shown again', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 25, 8));
    const t = await start({ clock });
    const shown = await login(t, t.demo.adminToken);
    const forgotten = await login(t, t.other.adminToken);
    clock.advance(SESSION_TTL_MS - 1);
    expect((await whoAmI(t, shown.cookie)).statusCode).toBe(200);
    clock.advance(1);
    expect((await whoAmI(t, shown.cookie)).statusCode).toBe(401);
    expect(await t.services.storage.sessions.findSession(hashSessionSecret(shown.secret))).toBeNull();
    // Nobody showed this one since it expired: it stays until a login purges.
    expect(await t.services.storage.sessions.findSession(hashSessionSecret(forgotten.secret))).not.toBeNull();
    const fresh = await login(t, t.demo.adminToken);
    expect(await t.services.storage.sessions.findSession(hashSessionSecret(forgotten.secret))).toBeNull();
    expect((await whoAmI(t, fresh.cookie)).statusCode).toBe(200);
    expect((await whoAmI(t, forgotten.cookie)).statusCode).toBe(401);
  });

  it('removes the session of a revoked token when it is shown, and keeps the other sessions', async () => {
    const t = await start();
    const { record, token } = await t.services.tenants.createAdminToken(t.demo.seq, 'laptop');
    const revoked = await login(t, token);
    const kept = await login(t, t.demo.adminToken);
    const stored = hashSessionSecret(revoked.secret);
    expect(await t.services.storage.sessions.findSession(stored)).not.toBeNull();
    await t.services.tenants.revokeAdminToken(t.demo.seq, record.id);
    expect((await whoAmI(t, revoked.cookie)).statusCode).toBe(401);
    expect(await t.services.storage.sessions.findSession(stored)).toBeNull();
    expect((await whoAmI(t, kept.cookie)).statusCode).toBe(200);
  });

  it('documents that logout, which ends the stored session, may find the store unavailable (503)', async () => {
    const t = await start();
    const logout = (await t.app.inject({ url: '/v1/openapi.json' })).json().paths['/v1/session'].delete;
    expect(Object.keys(logout.responses)).toContain('503');
  });
});
