import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildSdk } from '@svc/sdk/build';
import { browserAvailable, launchBrowser } from './browser';
import { startTestApp, type TestApp } from './test-app';

const SCREENSHOTS = join(process.cwd(), 'docs', 'screenshots');

describe.runIf(browserAvailable())('SvcCore in a real browser', () => {
  let browser: Browser;
  let t: TestApp;
  let context: BrowserContext;
  let page: Page;

  let hostServer: Server;
  let hostOrigin: string;

  beforeAll(async () => {
    hostServer = createServer((_request, response) => response.setHeader('content-type', 'text/html').end('<!doctype html><title>Player</title>'));
    await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
    hostOrigin = `http://127.0.0.1:${(hostServer.address() as AddressInfo).port}`;
    await buildSdk();
    browser = await launchBrowser();
    mkdirSync(SCREENSHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    hostServer?.close();
  });
  beforeEach(async () => {
    t = await startTestApp({ listen: true, config: { realtime: { throttleMs: 50, resumeGraceMs: 300 } } });
    // Viewers are placed in Germany, one of the default markets.
    await patchSettings({ fallbackCountry: 'DE' });
    context = await browser.newContext({ viewport: { width: 960, height: 640 } });
    page = await context.newPage();
    page.on('pageerror', (error) => console.error('page error:', error.message));
  });
  afterEach(async () => {
    await context.close();
    await t.close();
  });

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  /** The customer's page: another origin, with its own CSP (none), not the service's. */
  const hostPage = () => `${hostOrigin}/player`;
  async function patchSettings(payload: object): Promise<void> {
    const response = await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin(), payload });
    expect(response.statusCode).toBe(200);
  }
  async function createOverlay(broadcastId: string, body: object): Promise<string> {
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id: broadcastId, campaignId: 1 } });
    const response = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays`, headers: admin(), payload: body });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().id;
  }
  const show = (broadcastId: string, overlayId: string) =>
    t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays/${overlayId}/show`, headers: admin() });
  const stored = (event?: string) =>
    t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq, ...(event ? { events: [event] } : {}) }, { limit: 10_000 });
  async function until<T>(probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (ok(value) || Date.now() > deadline) return value;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** A host page on the service's origin: the SDK from a plain script tag and the overlay over a "player". */
  async function openPlayer(options: { apiKey?: string; content?: string | null; userId?: string } = {}): Promise<void> {
    await page.goto(hostPage());
    await page.setContent(`<!doctype html><html><body style="margin:0">
      <div id="player" style="position:relative;width:900px;height:506px;background:#111"></div>
      <script src="${t.url}/sdk/svc-core.js"></script>
      <script>
        window.errors = [];
        SvcSDK.configure({ apiKey: ${JSON.stringify(options.apiKey ?? t.demo.apiKey)}${options.userId ? `, userId: ${JSON.stringify(options.userId)}` : ''} });
        SvcSDK.on('error', (e) => window.errors.push(e.code));
        document.getElementById('player').appendChild(SvcEngagementOverlay());
        window.joined = ${options.content === null ? 'Promise.resolve()' : `SvcSDK.setContent(${JSON.stringify(options.content ?? 'match-1')}).then(() => 'ok', (e) => e.code + ': ' + e.message)`};
      </script></body></html>`);
  }
  const overlay = () => page.locator('svc-engagement-overlay');

  it('fetches the configuration once, then serves the cached one at once and revalidates with If-None-Match', async () => {
    const configRequests: Array<Record<string, string>> = [];
    page.on('request', (request) => {
      if (request.url().includes('/v1/sdk/config')) configRequests.push(request.headers());
    });
    await patchSettings({ theme: { primaryColor: '#E4007C' } });
    const pollId = await createOverlay('match-1', { type: 'poll', question: 'Who wins?', options: ['Reds', 'Blues'] });
    await show('match-1', pollId);
    await openPlayer();
    expect(await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined)).toBe('ok');
    expect(configRequests).toHaveLength(1);

    // Next start: the config answer is held back 2 s, yet the cached theme applies at once.
    await page.route('**/v1/sdk/config**', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      await route.continue();
    });
    const started = Date.now();
    await openPlayer();
    await overlay().locator('button', { hasText: 'Reds' }).waitFor({ timeout: 1_500 });
    expect(Date.now() - started).toBeLessThan(2_000);
    const color = await overlay().evaluate((el) => getComputedStyle(el).getPropertyValue('--svc-primary').trim());
    expect(color.toLowerCase()).toBe('#e4007c');
    await until(async () => configRequests.length, (n) => n === 2);
    expect(configRequests[1]!['if-none-match']).toMatch(/^"[\w-]+"$/);
  });

  it('shows a poll pushed through the admin API and stores votes by mouse and by keyboard', async () => {
    await openPlayer({ userId: 'mouse-user' });
    const pollId = await createOverlay('match-1', { type: 'poll', question: 'Man of the match?', options: ['Ada', 'Bo', 'Cy'] });
    await show('match-1', pollId);
    await overlay().getByRole('button', { name: 'Bo' }).click();
    await overlay().getByText('Thanks for voting', { exact: true }).waitFor();
    await expect.poll(() => overlay().locator('[aria-live="polite"]').textContent()).toContain('Bo: 1');
    await page.screenshot({ path: join(SCREENSHOTS, 'sdk-poll.png') });

    const keyboard = await context.newPage();
    page = keyboard;
    await openPlayer({ userId: 'keyboard-user' });
    await overlay().getByRole('button', { name: 'Ada' }).waitFor();
    await page.keyboard.press('Tab');
    await expect.poll(() => overlay().evaluate((el) => el.shadowRoot!.activeElement?.textContent)).toBe('Ada');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await overlay().getByText('Thanks for voting', { exact: true }).waitFor();

    const votes = await until(() => stored('poll.voted'), (rows) => rows.length === 2);
    expect(votes.map((v) => [v.userId, v.data])).toEqual(
      expect.arrayContaining([
        ['mouse-user', { pollId, questionText: 'Man of the match?', optionSelected: 'Bo', optionIndex: 1 }],
        ['keyboard-user', { pollId, questionText: 'Man of the match?', optionSelected: 'Bo', optionIndex: 1 }],
      ]),
    );
    const exported = (await t.app.inject({ url: '/v1/analytics/events?event=poll.voted&format=ndjson', headers: admin() })).body;
    expect(exported.trim().split('\n')).toHaveLength(2);
  });

  it('tracks views, taps, cart and checkout with their commerce fields', async () => {
    await t.app.inject({ method: 'POST', url: '/v1/sponsors', headers: admin(), payload: { id: 'acme', name: 'Acme' } });
    const productId = await createOverlay('match-1', { type: 'product', name: 'Home jersey', price: 79.9, currency: 'EUR', placement: 'carousel', sponsorId: 'acme', productId: 'jersey' });
    await show('match-1', productId);
    await openPlayer();
    await overlay().getByRole('button', { name: 'Home jersey' }).click();
    await overlay().getByRole('button', { name: 'Add to cart' }).click();
    await overlay().getByRole('button', { name: 'Add to cart' }).click();
    await page.screenshot({ path: join(SCREENSHOTS, 'sdk-product.png') });
    await overlay().getByRole('button', { name: /Cart \(2\)/ }).click();
    await overlay().getByRole('button', { name: 'Checkout' }).click();
    await overlay().getByRole('button', { name: 'Place order' }).click();
    await overlay().getByText('Thank you for your order').waitFor();

    const events = await until(() => stored(), (rows) => rows.some((r) => r.event === 'checkout.completed') && rows.some((r) => r.event === 'product.viewed'));
    const byName = (name: string) => events.filter((e) => e.event === name);
    expect(byName('product.viewed')[0]).toMatchObject({ data: { productId: 'jersey', placement: 'carousel' }, sponsorId: 'acme' });
    expect(byName('product.tapped')[0]).toMatchObject({ data: { productId: 'jersey' }, sponsorId: 'acme', orderId: null });
    expect(byName('cart.item_added')).toHaveLength(2);
    expect(byName('cart.item_added')[1]).toMatchObject({ data: { productId: 'jersey', quantity: 1 }, total: 159.8 });
    expect(byName('checkout.started')[0]).toMatchObject({ total: 159.8, items: [{ productId: 'jersey', name: 'Home jersey', quantity: 2, unitPrice: 79.9, currency: 'EUR' }] });
    const completed = byName('checkout.completed')[0]!;
    expect(completed).toMatchObject({ data: { currency: 'EUR' }, total: 159.8, sponsorId: 'acme' });
    expect(completed.orderId).toMatch(/^ord_/);
    expect(byName('broadcast.joined')).toHaveLength(1);
  });

  it('carries a userId set after joining into the votes the server records', async () => {
    const pollId = await createOverlay('match-1', { type: 'poll', question: 'Signed in?', options: ['Yes', 'No'] });
    await show('match-1', pollId);
    await openPlayer();
    await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    await page.evaluate(() => (window as unknown as { SvcSDK: { setUserId(id: string): void } }).SvcSDK.setUserId('late-user'));
    await page.waitForTimeout(300);
    await overlay().getByRole('button', { name: 'Yes' }).click();
    const votes = await until(() => stored('poll.voted'), (rows) => rows.length > 0);
    expect(votes[0]!.userId).toBe('late-user');
  });

  it('sends the events a closed tab left in its queue', async () => {
    await page.goto(hostPage());
    const orphan = { event: 'product.tapped', eventId: '0190a6a0-0000-7000-8000-00000000abcd', sessionId: 'svc_oldtab', broadcastId: 'match-1', timestamp: new Date().toISOString(), data: { productId: 'left-behind' } };
    await page.evaluate(([key, value]) => localStorage.setItem(key!, value!), [`svc:queue:${t.demo.apiKey}:svc_oldtab`, JSON.stringify([orphan])]);
    await openPlayer();
    const rows = await until(() => stored('product.tapped'), (r) => r.length > 0);
    expect(rows.map((r) => r.eventId)).toEqual([orphan.eventId]);
    expect(await page.evaluate((key) => localStorage.getItem(key), `svc:queue:${t.demo.apiKey}:svc_oldtab`)).toBeNull();
  });

  it('emits broadcast.left on disconnect()', async () => {
    await openPlayer();
    await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    await page.evaluate(() => (window as unknown as { SvcSDK: { disconnect(): void } }).SvcSDK.disconnect());
    await until(() => stored('broadcast.left'), (rows) => rows.length > 0);
    // After the reconnect grace, still exactly one: the server knows the viewer left on purpose.
    await new Promise((resolve) => setTimeout(resolve, 800));
    const left = await stored('broadcast.left');
    expect(left).toHaveLength(1);
    expect(left[0]!.data).toMatchObject({ reason: 'closed' });
  });

  it('records a new broadcast.joined when the connection comes back after the grace period, and one left per stretch', async () => {
    await openPlayer();
    await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    await until(() => stored('broadcast.joined'), (rows) => rows.length > 0);
    // The server loses the socket; the SDK's first reconnect waits at least 500 ms, past the 300 ms grace.
    const sessions = (t.app.gateway as unknown as { sessions: Map<string, { connection: { ws: { terminate(): void } } | null }> }).sessions;
    for (const session of sessions.values()) session.connection?.ws.terminate();
    const joined = await until(() => stored('broadcast.joined'), (rows) => rows.length >= 2, 8_000);
    expect(joined).toHaveLength(2);
    expect(new Set(joined.map((e) => e.sessionId)).size).toBe(1);
    expect((await stored('broadcast.left')).map((e) => e.data.reason)).toEqual(['disconnect']);

    const rejoinedAt = Math.max(...joined.map((e) => Date.parse(e.timestamp)));
    await page.evaluate(() => (window as unknown as { SvcSDK: { disconnect(): void } }).SvcSDK.disconnect());
    const leftAt = Date.now();
    const left = await until(() => stored('broadcast.left'), (rows) => rows.length >= 2);
    const own = left.find((e) => e.data.reason === 'closed');
    expect(left).toHaveLength(2);
    // Watched from the second join, not the first.
    expect(Number(own!.data.watchedMs)).toBeLessThanOrEqual(leftAt - rejoinedAt + 50);
  });

  it('hides polls when the flag is off and commerce outside the markets', async () => {
    const pollId = await createOverlay('match-1', { type: 'poll', question: 'Hidden?', options: ['Yes', 'No'] });
    const productId = await createOverlay('match-1', { type: 'product', name: 'Scarf', price: 20, currency: 'EUR', placement: 'banner' });
    const contestId = await createOverlay('match-1', { type: 'contest', title: 'Win a ball' });
    for (const id of [pollId, productId, contestId]) await show('match-1', id);
    await patchSettings({ featureFlags: { polls: false }, availableMarkets: ['FR'] });
    await openPlayer();
    await overlay().getByText('Win a ball').first().waitFor({ timeout: 5_000 });
    expect(await overlay().getByText('Hidden?').count()).toBe(0);
    expect(await overlay().getByText('Scarf').count()).toBe(0);
    await patchSettings({ featureFlags: { polls: true }, availableMarkets: ['DE'] });
    // The next start asks the server again and applies the change.
    await openPlayer();
    await overlay().getByText('Hidden?').waitFor({ timeout: 5_000 });
    await overlay().getByText('Scarf').waitFor();
  });

  it('rejects setContent with a clear error for an invalid key, and shows nothing', async () => {
    await openPlayer({ apiKey: `svc_pk_${'X'.repeat(32)}` });
    const result = await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    expect(result).toMatch(/^invalid_api_key: /);
    expect(await overlay().evaluate((el) => el.shadowRoot!.querySelectorAll('section').length)).toBe(0);
  });

  it('loses nothing offline and stores each event once when the network returns', async () => {
    await openPlayer();
    await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    await context.setOffline(true);
    const ids = await page.evaluate(() => {
      const sdk = (window as unknown as { SvcSDK: { track(name: string, fields: object): string } }).SvcSDK;
      return Array.from({ length: 8 }, (_, i) => sdk.track('product.tapped', { data: { productId: `p${i}` } }));
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await context.setOffline(false);
    const rows = await until(() => stored('product.tapped'), (r) => r.length >= 8, 15_000);
    expect(rows.map((r) => r.eventId).sort()).toEqual([...ids].sort());
  });

  it('sends queued events with the beacon when the page goes away', async () => {
    await openPlayer();
    await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    // Track and leave in the same task: the queue has no chance to flush normally.
    const ids = await page.evaluate(() => {
      const sdk = (window as unknown as { SvcSDK: { track(name: string, fields: object): string } }).SvcSDK;
      const tracked = Array.from({ length: 5 }, (_, i) => sdk.track('sponsor_moment.tapped', { data: { momentId: `m${i}`, sponsorId: 'acme' } }));
      window.location.href = 'about:blank';
      return tracked;
    });
    const rows = await until(() => stored('sponsor_moment.tapped'), (r) => r.length >= 5);
    expect(rows.map((r) => r.eventId).sort()).toEqual([...ids].sort());
  });

  it('runs the migration shims of 0.1.x with one warning each', async () => {
    const warnings: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'warning') warnings.push(message.text());
    });
    await page.goto(hostPage());
    await page.setContent(`<script src="${t.url}/sdk/svc-core.js"></script>`);
    const result = await page.evaluate(async (apiKey) => {
      const core = (window as unknown as { SvcCore: Record<string, any> }).SvcCore;
      core.SvcSDK.configure({ apiKey, campaignApiKey: apiKey, autoDiscover: true });
      core.SvcSDK.configure({ apiKey, campaignApiKey: apiKey });
      const config = await core.ConfigurationLoader.loadConfiguration({ userCountryCode: 'DE' });
      await core.ConfigurationLoader.loadConfiguration({});
      await core.setBroadcastContext(new core.BroadcastContext('legacy-show'));
      return config.theme.primaryColor;
    }, t.demo.apiKey);
    expect(result).toMatch(/^#/);
    expect(warnings.filter((w) => w.includes('campaignApiKey'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('autoDiscover'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('ConfigurationLoader'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('setBroadcastContext'))).toHaveLength(1);
    const joined = await until(() => stored('broadcast.joined'), (rows) => rows.length > 0);
    expect(joined.map((e) => e.broadcastId)).toEqual(['legacy-show']);
  });

  it('serves the demo page with the overlay and no admin token, within its CSP', async () => {
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content[- ]Security[- ]Policy/i.test(message.text())) violations.push(message.text());
    });
    const response = await page.goto(`${t.url}/demo`);
    const html = await response!.text();
    expect(html).toContain(t.demo.apiKey);
    expect(html).not.toContain(t.demo.adminToken);
    expect(html).toContain('<script src="/sdk/svc-core.js"></script>');
    expect(html).not.toMatch(/<script>/);
    expect(response!.headers()['content-security-policy']).toContain("script-src 'self';");
    await page.locator('svc-engagement-overlay').waitFor({ state: 'attached' });
    // The page's own script ran: it joined the broadcast over the WebSocket.
    await page.locator('#status', { hasText: /Connected|watching/ }).waitFor();
    expect(violations).toEqual([]);
  });
});
