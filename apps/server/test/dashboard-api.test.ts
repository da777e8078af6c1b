import { afterEach, describe, expect, it } from 'vitest';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer } from './ws-client';

describe('dashboard login', () => {
  let t: TestApp;
  afterEach(() => t.close());

  it('exchanges an admin token for an HttpOnly session cookie that works until logout', async () => {
    t = await startTestApp();
    const wrong = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.apiKey } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();

    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.adminToken } });
    expect(login.json()).toEqual({ tenant: 'demo', name: 'Demo' });
    const setCookie = String(login.headers['set-cookie']);
    expect(setCookie).toMatch(/^svc_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    const cookie = setCookie.split(';')[0]!;
    expect((await t.app.inject({ url: '/v1/session', headers: { cookie } })).json()).toEqual({ tenant: 'demo', name: 'Demo' });
    expect((await t.app.inject({ url: '/v1/settings', headers: { cookie } })).json().tenant).toBe('demo');

    const logout = await t.app.inject({ method: 'DELETE', url: '/v1/session', headers: { cookie } });
    expect(logout.statusCode).toBe(204);
    expect(String(logout.headers['set-cookie'])).toContain('Max-Age=0');
    expect((await t.app.inject({ url: '/v1/settings', headers: { cookie } })).statusCode).toBe(401);
  });

  it('ends the sessions of a revoked token', async () => {
    t = await startTestApp();
    const { record, token } = await t.services.tenants.createAdminToken(t.demo.seq, 'laptop');
    const cookie = String((await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token } })).headers['set-cookie']).split(';')[0]!;
    expect((await t.app.inject({ url: '/v1/session', headers: { cookie } })).statusCode).toBe(200);
    await t.services.tenants.revokeAdminToken(t.demo.seq, record.id);
    expect((await t.app.inject({ url: '/v1/session', headers: { cookie } })).statusCode).toBe(401);
  });

  it('marks the cookie Secure when the service is served over https', async () => {
    t = await startTestApp({ config: { publicUrl: 'https://svc.example.com' } });
    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: t.demo.adminToken } });
    expect(String(login.headers['set-cookie'])).toMatch(/; Secure$/);
  });
});

describe('GET /v1/analytics/live', () => {
  let t: TestApp;
  afterEach(() => t.close());

  /** Reads Server-Sent Events from a real HTTP connection. */
  async function openStream(url: string, token: string) {
    const controller = new AbortController();
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    const events: Array<{ event: string; data: any; at: number }> = [];
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = /^event: (.+)$/m.exec(block)?.[1];
            const data = /^data: (.+)$/m.exec(block)?.[1];
            if (event && data) events.push({ event, data: JSON.parse(data), at: Date.now() });
          }
        }
      } catch {
        // aborted
      }
    })();
    const next = async (predicate: (e: { event: string; data: any }) => boolean, from = 0, timeoutMs = 3_000) => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const found = events.slice(from).find(predicate);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`no matching event; got ${events.map((e) => e.event).join(', ')}`);
    };
    return { events, next, close: () => controller.abort() };
  }

  it('sends the panels at once and again within a second of new events, and live viewer changes', async () => {
    t = await startTestApp({ listen: true });
    const stream = await openStream(`${t.url}/v1/analytics/live?broadcastId=live-1`, t.demo.adminToken);
    const first = await stream.next((e) => e.event === 'overview');
    expect(first.data.engagement.joinedViewers).toBe(0);

    const sentAt = Date.now();
    await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-svc-api-key': t.demo.apiKey },
      payload: { events: [validEvent('broadcast.joined', new Date(), { broadcastId: 'live-1' }), validEvent('poll.voted', new Date(), { broadcastId: 'live-1' })] },
    });
    const count = stream.events.length;
    const update = await stream.next((e) => e.event === 'overview' && e.data.engagement.joinedViewers === 1, count);
    expect(update.at - sentAt).toBeLessThan(1_000);
    expect(update.data.engagement).toEqual({ rate: 1, engagedViewers: 1, joinedViewers: 1 });

    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_livewatch', contentId: 'live-1' });
    await viewer.next((m) => m.type === 'welcome');
    expect((await stream.next((e) => e.event === 'viewers' && e.data.live === 1)).data).toEqual({ live: 1 });
    viewer.ws.terminate();
    stream.close();
  });

  it("never sends a tenant another tenant's events or viewers, on a broadcast with the same id", async () => {
    t = await startTestApp({ listen: true });
    const mine = await openStream(`${t.url}/v1/analytics/live?broadcastId=live-1`, t.demo.adminToken);
    const theirs = await openStream(`${t.url}/v1/analytics/live?broadcastId=live-1`, t.other.adminToken);
    await mine.next((e) => e.event === 'overview');
    await theirs.next((e) => e.event === 'overview');
    await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-svc-api-key': t.demo.apiKey },
      payload: { events: [validEvent('broadcast.joined', new Date(), { broadcastId: 'live-1' }), validEvent('poll.voted', new Date(), { broadcastId: 'live-1' })] },
    });
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_livewatch', contentId: 'live-1' });
    await viewer.next((m) => m.type === 'welcome');
    // Tenant demo's stream shows both; by then the other stream has had every chance to.
    await mine.next((e) => e.event === 'overview' && e.data.engagement.joinedViewers === 1);
    // The live count comes in an overview or, when only it changed, in a viewers event.
    await mine.next((e) => (e.event === 'viewers' ? e.data.live : e.data.viewers?.live) === 1);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const overviews = theirs.events.filter((e) => e.event === 'overview');
    expect(overviews.length).toBeGreaterThan(0);
    for (const { data } of overviews) expect([data.engagement.joinedViewers, data.polls.length, data.viewers.live]).toEqual([0, 0, 0]);
    expect(theirs.events.filter((e) => e.event === 'viewers').every((e) => e.data.live === 0)).toBe(true);
    viewer.ws.terminate();
    mine.close();
    theirs.close();
  });

  it('refuses a stream without an admin credential', async () => {
    t = await startTestApp({ listen: true });
    const response = await fetch(`${t.url}/v1/analytics/live`, { headers: { 'x-svc-api-key': t.demo.apiKey } });
    expect(response.status).toBe(401);
  });
});
