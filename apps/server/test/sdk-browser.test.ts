import { mkdirSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildSdk } from '@svc/sdk/build';
import { DemoBroadcast } from '../src/demo-broadcast';
import { browserAvailable, launchBrowser, startPlayerPage, type PlayerPage } from './browser';
import { startTestApp, type TestApp } from './test-app';

const SCREENSHOTS = join(process.cwd(), 'docs', 'screenshots');
/** Long enough that a broadcast.left stored within it cannot be the one the server writes after it. */
const RESUME_GRACE_MS = 3_000;

describe.runIf(browserAvailable())('SvcCore in a real browser', () => {
  let browser: Browser;
  let t: TestApp;
  let context: BrowserContext;
  let page: Page;

  let hostServer: PlayerPage;
  let hostOrigin: string;

  beforeAll(async () => {
    hostServer = await startPlayerPage();
    hostOrigin = hostServer.origin;
    await buildSdk();
    browser = await launchBrowser();
    mkdirSync(SCREENSHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    hostServer?.close();
  });
  beforeEach(async () => {
    t = await startTestApp({ listen: true, config: { realtime: { throttleMs: 50, resumeGraceMs: RESUME_GRACE_MS } } });
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

  it('fetches the configuration once, then applies the cached one (theme and flags) before the revalidation answers', async () => {
    const configRequests: Array<Record<string, string>> = [];
    page.on('request', (request) => {
      if (request.url().includes('/v1/sdk/config')) configRequests.push(request.headers());
    });
    await patchSettings({ theme: { primaryColor: '#E4007C' }, featureFlags: { polls: false } });
    for (const body of [{ type: 'poll', question: 'Who wins?', options: ['Reds', 'Blues'] }, { type: 'contest', title: 'Win a ball' }]) {
      await show('match-1', await createOverlay('match-1', body));
    }
    await openPlayer();
    expect(await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined)).toBe('ok');
    expect(configRequests).toHaveLength(1);
    const primary = () => overlay().evaluate((el) => getComputedStyle(el).getPropertyValue('--svc-primary').trim().toLowerCase());

    // The dashboard changes both; the next start shows the cached ones until the server answers.
    await patchSettings({ theme: { primaryColor: '#00A86B' }, featureFlags: { polls: true } });
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    await page.route('**/v1/sdk/config**', async (route) => {
      await answered;
      await route.continue();
    });
    await openPlayer();
    await overlay().getByText('Win a ball').first().waitFor({ timeout: 5_000 });
    await expect.poll(() => configRequests.length).toBe(2);
    expect(await overlay().getByText('Who wins?').count()).toBe(0);
    expect(await primary()).toBe('#e4007c');

    answer();
    await overlay().getByRole('button', { name: 'Reds' }).waitFor({ timeout: 5_000 });
    await expect.poll(primary).toBe('#00a86b');
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
    const notice = overlay().locator('.notice', { hasText: 'Thank you for your order' });
    await notice.waitFor();
    // Read out too, through the live region that is always in the page.
    await expect.poll(() => overlay().locator('[aria-live="polite"]').textContent()).toBe('Thank you for your order');
    // A notice goes by itself; it does not stay over the next overlays.
    await notice.waitFor({ state: 'hidden', timeout: 6_000 });

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

  it('emits broadcast.left on disconnect(): its own event, not the one the server writes after the grace', async () => {
    await openPlayer();
    await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    const disconnectedAt = Date.now();
    const sent = await page.evaluate(() => {
      const sdk = (window as unknown as { SvcSDK: { on(name: string, fn: (record: unknown) => void): void; disconnect(): void } }).SvcSDK;
      let record: unknown = null;
      sdk.on('broadcast.left', (r) => (record = r));
      sdk.disconnect();
      return record as { eventId: string; sessionId: string; data: { reason: string; watchedMs: number } } | null;
    });
    expect(sent).not.toBeNull();
    // Stored well before the server's grace could run out, with the eventId the SDK gave it.
    const left = await until(() => stored('broadcast.left'), (rows) => rows.length > 0, RESUME_GRACE_MS - 1_000);
    expect(Date.now() - disconnectedAt).toBeLessThan(RESUME_GRACE_MS);
    expect(left).toHaveLength(1);
    expect(left[0]).toMatchObject({ eventId: sent!.eventId, sessionId: sent!.sessionId, broadcastId: 'match-1', data: { reason: 'closed', watchedMs: sent!.data.watchedMs } });
    // After the grace, still that one: the server knows the viewer left on purpose.
    await new Promise((resolve) => setTimeout(resolve, disconnectedAt + RESUME_GRACE_MS + 1_000 - Date.now()));
    expect((await stored('broadcast.left')).map((row) => row.eventId)).toEqual([sent!.eventId]);
  });

  it('records a new broadcast.joined when the connection comes back after the grace period, and one left per stretch', async () => {
    await openPlayer();
    await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    await until(() => stored('broadcast.joined'), (rows) => rows.length > 0);
    // The server loses the socket, and the page stays offline (no new socket) until the grace is over.
    await page.context().setOffline(true);
    const sessions = (t.app.gateway as unknown as { sessions: { values(): Iterable<{ connection: { ws: { terminate(): void } } | null }> } }).sessions;
    for (const session of sessions.values()) session.connection?.ws.terminate();
    await new Promise((resolve) => setTimeout(resolve, RESUME_GRACE_MS + 500));
    await page.context().setOffline(false);
    const joined = await until(() => stored('broadcast.joined'), (rows) => rows.length >= 2, 15_000);
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

  it('loses nothing in a network outage and stores each event once when the network returns', async () => {
    // Upgrades reach the gateway only while `socketsUp`; destroying a socket is the network dropping it.
    let socketsUp = true;
    const sockets: Duplex[] = [];
    t.app.server.prependListener('upgrade', (_request, socket: Duplex) => (socketsUp ? sockets.push(socket) : socket.destroy()));
    await openPlayer();
    await page.evaluate(() => {
      const w = window as unknown as { SvcSDK: { on(name: string, fn: (e: { open: boolean }) => void): void }; connectionOpen: boolean; joined: Promise<string> };
      w.connectionOpen = true;
      w.SvcSDK.on('connection', (e) => (w.connectionOpen = e.open));
      return w.joined;
    });
    await until(() => stored('broadcast.joined'), (rows) => rows.length === 1);
    let offline = false;
    const offlineAttempts: string[] = [];
    const sends: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname !== '/v1/events') return;
      if (offline) offlineAttempts.push(request.url());
      else sends.push(...((JSON.parse(request.postData() ?? '{}') as { events?: Array<{ eventId: string }> }).events ?? []).map((e) => e.eventId));
    });

    // The outage. Offline mode fails new requests and sockets and clears navigator.onLine, but
    // only holds the frames of a socket already open (playwright#4910): that one is cut here.
    offline = true;
    socketsUp = false;
    await page.route('**/v1/events*', (route) => route.abort('internetdisconnected'));
    await context.setOffline(true);
    for (const socket of sockets) socket.destroy();
    await page.waitForFunction(() => (window as unknown as { connectionOpen: boolean }).connectionOpen === false);
    const ids = await page.evaluate(() => {
      const sdk = (window as unknown as { SvcSDK: { track(name: string, fields: object): string } }).SvcSDK;
      return Array.from({ length: 8 }, (_, i) => sdk.track('product.tapped', { data: { productId: `p${i}` } }));
    });
    // Long enough for reconnect attempts (the first comes within 1.5 s) to fail.
    await page.waitForTimeout(2_500);
    expect(await stored('product.tapped')).toEqual([]);
    const queued = await page.evaluate((prefix) => {
      const keys = Object.keys(localStorage).filter((key) => key.startsWith(prefix));
      return keys.flatMap((key) => (JSON.parse(localStorage.getItem(key)!) as Array<{ eventId: string }>).map((e) => e.eventId));
    }, `svc:queue:${t.demo.apiKey}:`);
    expect(queued.sort()).toEqual([...ids].sort());
    // While the browser says it is offline the queue waits for `online` instead of trying in vain.
    expect(offlineAttempts).toEqual([]);

    // The network returns, the realtime endpoint not yet: the `online` event sends the queue over HTTP.
    offline = false;
    await page.unroute('**/v1/events*');
    await context.setOffline(false);
    await until(() => stored('product.tapped'), (rows) => rows.length >= ids.length, 15_000);
    await expect.poll(() => page.evaluate(() => (window as unknown as { SvcSDK: { client: { pendingEvents: number } } }).SvcSDK.client.pendingEvents), { timeout: 10_000 }).toBe(0);
    const exported = (await t.app.inject({ url: '/v1/analytics/events?event=product.tapped&format=ndjson', headers: admin() })).body;
    const exportedIds = exported.trim().split('\n').map((line) => (JSON.parse(line) as { eventId: string }).eventId);
    expect(exportedIds.sort()).toEqual([...ids].sort());
    // Each was sent once: nothing went out half-way during the outage to be sent again after it.
    expect(ids.map((id) => sends.filter((sent) => sent === id).length)).toEqual(ids.map(() => 1));
  });

  it('delivers the queued events with sendBeacon when the page is left while the socket holds them', async () => {
    // How each /v1/events request reached the server: sendBeacon posts text/plain with the key in the query.
    const arrivals: Array<{ method: string | undefined; contentType: string | undefined; keyInQuery: boolean }> = [];
    t.app.server.on('request', (request: IncomingMessage) => {
      const url = new URL(request.url ?? '/', t.url);
      if (url.pathname !== '/v1/events') return;
      arrivals.push({ method: request.method, contentType: request.headers['content-type'], keyInQuery: url.searchParams.has('apiKey') });
    });
    // The socket stays open but, once `holding`, its `track` frames never reach the server (no ack).
    let holding = false;
    const held: string[] = [];
    await page.routeWebSocket(/\/v1\/ws/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((message) => {
        const text = String(message);
        const parsed = JSON.parse(text) as { type: string; events?: Array<{ eventId: string }> };
        if (holding && parsed.type === 'track') held.push(...(parsed.events ?? []).map((e) => e.eventId));
        else server.send(text);
      });
    });
    // The fetch path (key in a header) hangs, should the SDK turn to it.
    await page.route((url) => url.pathname === '/v1/events' && !url.searchParams.has('apiKey'), () => undefined);
    await openPlayer();
    await page.evaluate(() => (window as unknown as { joined: Promise<string> }).joined);
    await until(() => stored('broadcast.joined'), (rows) => rows.length === 1);

    holding = true;
    const ids = await page.evaluate(() => {
      const sdk = (window as unknown as { SvcSDK: { track(name: string, fields: object): string } }).SvcSDK;
      return Array.from({ length: 5 }, (_, i) => sdk.track('sponsor_moment.tapped', { data: { momentId: `m${i}`, sponsorId: 'acme' } }));
    });
    // The normal path tried and could not deliver: the events wait in the queue for an ack.
    await expect.poll(() => held.length).toBe(ids.length);
    expect(held.sort()).toEqual([...ids].sort());
    expect(await page.evaluate(() => (window as unknown as { SvcSDK: { client: { pendingEvents: number } } }).SvcSDK.client.pendingEvents)).toBe(ids.length);
    expect(await stored('sponsor_moment.tapped')).toEqual([]);
    expect(arrivals).toEqual([]);

    // Leaving the page fires pagehide; only the beacon can still carry the events. (A navigation,
    // not page.close(): on a loaded machine a closed page's renderer may be torn down before its
    // pagehide handlers run, which is Playwright's teardown, not the browser's tab close.)
    await page.goto('about:blank');
    // The beacon leaves from the browser process after the page is gone: give a loaded machine time.
    const rows = await until(() => stored('sponsor_moment.tapped'), (r) => r.length >= ids.length, 20_000);
    expect({ stored: rows.map((r) => r.eventId).sort(), arrivals: arrivals.length }).toEqual({ stored: [...ids].sort(), arrivals: 1 });
    expect(arrivals).toEqual([{ method: 'POST', contentType: expect.stringMatching(/^text\/plain\b/), keyInQuery: true }]);
  });

  it('runs every migration shim of 0.1.x, each warning once however often it is used', async () => {
    const warnings: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'warning') warnings.push(message.text());
    });
    await page.goto(hostPage());
    await page.setContent(`<script src="${t.url}/sdk/svc-core.js"></script>`);
    const result = await page.evaluate(async (apiKey) => {
      const core = (window as unknown as { SvcCore: Record<string, any> }).SvcCore;
      for (let i = 0; i < 2; i++) core.SvcSDK.configure({ apiKey, campaignApiKey: apiKey, autoDiscover: true, configFile: 'svc-config.json' });
      const config = await core.ConfigurationLoader.loadConfiguration({ userCountryCode: 'DE' });
      await core.ConfigurationLoader.loadConfiguration({});
      await core.setBroadcastContext(new core.BroadcastContext('legacy-show'));
      await core.setBroadcastContext(new core.BroadcastContext('legacy-show-2'));
      return config.theme.primaryColor;
    }, t.demo.apiKey);
    expect(result).toMatch(/^#/);
    const shims = ['campaignApiKey', 'autoDiscover', 'svc-config.json', 'ConfigurationLoader.loadConfiguration', 'setBroadcastContext'];
    expect(shims.map((shim) => warnings.filter((w) => w.includes(shim)).length)).toEqual(shims.map(() => 1));
    expect(warnings.filter((w) => w.startsWith('[SvcSDK]'))).toHaveLength(shims.length);
    const joined = await until(() => stored('broadcast.joined'), (rows) => rows.length === 2);
    expect(joined.map((e) => e.broadcastId).sort()).toEqual(['legacy-show', 'legacy-show-2']);
  });

  it('shows the overlay in the configured default language', async () => {
    await show('match-1', await createOverlay('match-1', { type: 'contest', title: 'Ball' }));
    await show('match-1', await createOverlay('match-1', { type: 'product', name: 'Scarf', price: 20, currency: 'EUR', placement: 'carousel' }));
    const strings: Record<string, string[]> = {
      en: ['Enter', 'Contest', 'Add to cart', 'Cart (0)'],
      de: ['Teilnehmen', 'Gewinnspiel', 'In den Warenkorb', 'Warenkorb (0)'],
      fr: ['Participer', 'Concours', 'Ajouter au panier', 'Panier (0)'],
    };
    for (const language of ['de', 'fr', 'en']) {
      await patchSettings({ localization: { defaultLanguage: language } });
      await openPlayer();
      // The cached configuration (the previous language) may show first; the server's follows.
      await overlay().getByRole('button', { name: strings[language]![0], exact: true }).waitFor({ timeout: 5_000 });
      const shown = await overlay().evaluate((el) => Array.from(el.shadowRoot!.querySelectorAll('button:not(.add), .add-label, h3, .label, li')).map((node) => node.textContent));
      expect(shown, language).toEqual(expect.arrayContaining(strings[language]!));
      const others = Object.entries(strings).flatMap(([other, texts]) => (other === language ? [] : texts));
      expect(shown.filter((text) => others.includes(text!)), language).toEqual([]);
    }
  });

  it('does not animate the overlay when the viewer prefers reduced motion', async () => {
    await show('match-1', await createOverlay('match-1', { type: 'poll', question: 'Calm?', options: ['Yes', 'No'] }));
    const moving = () =>
      overlay().evaluate((el) =>
        Array.from(el.shadowRoot!.querySelectorAll('*')).flatMap((node) => {
          const style = getComputedStyle(node);
          const transitions = style.transitionDuration.split(',').some((duration) => parseFloat(duration) > 0);
          const name = [node.localName, ...Array.from(node.classList)].join('.');
          return [...(style.animationName !== 'none' ? [`${name} animation`] : []), ...(transitions ? [`${name} transition`] : [])];
        }),
      );
    for (const reducedMotion of ['no-preference', 'reduce'] as const) {
      await page.emulateMedia({ reducedMotion });
      await openPlayer();
      // A card slides in when it appears; a vote draws the result bars, whose width is animated.
      await overlay().getByRole('button', { name: 'Yes' }).waitFor();
      const appearing = await moving();
      await overlay().getByRole('button', { name: 'Yes' }).click();
      await overlay().getByText('Thanks for voting', { exact: true }).waitFor();
      const voted = await moving();
      if (reducedMotion === 'reduce') expect([...appearing, ...voted]).toEqual([]);
      else {
        expect(appearing).toContain('section.card.poll animation');
        expect(voted).toContain('span.fill transition');
        // The card redrawn after the vote does not slide in again.
        expect(voted).not.toContain('section.card.poll animation');
      }
    }
  });

  it('plays the scripted demo on /demo: its scenes in turn, never two at once', async () => {
    const demo = new DemoBroadcast(t.services.content, t.services.tenants, { stepMs: 1_500, baseUrl: () => t.url });
    try {
      await page.goto(`${t.url}/demo`);
      await page.locator('#status', { hasText: /Connected|watching/ }).waitFor();
      // What the viewer sees, sampled: each set of cards on screen, and each card as it appears.
      await page.evaluate(() => {
        const w = window as unknown as { screens: string[][]; appeared: string[] };
        w.screens = [];
        w.appeared = [];
        let onScreen = new Set<string>();
        setInterval(() => {
          const cards = Array.from(document.querySelector('svc-engagement-overlay')!.shadowRoot!.querySelectorAll<HTMLElement>('section.card[data-overlay]'));
          for (const card of cards) if (!onScreen.has(card.dataset.overlay!)) w.appeared.push(card.dataset.type!);
          onScreen = new Set(cards.map((card) => card.dataset.overlay!));
          const screen = cards.map((card) => card.dataset.type!).sort();
          if (screen.length && JSON.stringify(screen) !== JSON.stringify(w.screens.at(-1))) w.screens.push(screen);
        }, 50);
      });
      await demo.start();
      const seen = () =>
        page.evaluate(() => {
          const { screens, appeared } = window as unknown as { screens: string[][]; appeared: string[] };
          return { screens, appeared };
        });
      // Every scene, each on screen on its own: a poll with the sponsor banner, products with the lineup, then with a contest.
      const scenes = [['poll', 'sponsor_moment'], ['lineup', 'product', 'product', 'product'], ['contest', 'product', 'product', 'product']].map((scene) => scene.sort());
      const scenesSeen = async () => {
        const { screens } = await seen();
        return scenes.filter((scene) => screens.some((screen) => JSON.stringify(screen) === JSON.stringify(scene))).length;
      };
      await expect.poll(scenesSeen, { timeout: 15_000 }).toBe(scenes.length);
      const { screens, appeared } = await seen();
      expect(appeared.slice(0, 2).sort()).toEqual(['poll', 'sponsor_moment']);
      // Nothing from two scenes at once, not even for a moment.
      for (const screen of screens) expect(scenes.some((scene) => screen.every((type) => scene.includes(type))), screen.join(', ')).toBe(true);
    } finally {
      demo.stop();
    }
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
    // The simulated latency hands the overlay a player 8 s behind the live edge, and takes it back.
    const player = () => page.locator('svc-engagement-overlay').evaluate((el) => (el as HTMLElement & { player: unknown }).player);
    expect(await player()).toBeNull();
    await page.getByLabel('Simulated 8 s latency').check();
    expect(await player()).toEqual({ latency: 8 });
    await page.getByLabel('Simulated 8 s latency').uncheck();
    expect(await player()).toBeNull();
    // The size buttons give the player the shape of a phone held upright, then of a desktop.
    const shape = () => page.locator('#player').evaluate((el) => el.getBoundingClientRect().width / el.getBoundingClientRect().height);
    await page.getByRole('button', { name: 'Phone' }).click();
    expect(await shape()).toBeCloseTo(390 / 844, 1);
    await page.getByRole('button', { name: 'Desktop' }).click();
    expect(await shape()).toBeCloseTo(1280 / 720, 1);
    expect(violations).toEqual([]);
  });
});
