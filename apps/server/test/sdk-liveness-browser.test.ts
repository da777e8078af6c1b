import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildSdk } from '@svc/sdk/build';
import { browserAvailable, launchBrowser, startPlayerPage, type PlayerPage } from './browser';
import { startTcpRelay, type TcpRelay } from './tcp-relay';
import { startTestApp, type TestApp } from './test-app';

/** The server's heartbeat here: the SDK checks its socket as often, so a hung node shows within 1.5 s. */
const HEARTBEAT_MS = 500;

interface Player {
  SvcSDK: { track(name: string, fields: object): string };
  joined: Promise<string>;
  resumed: boolean[];
}

describe.runIf(browserAvailable())('SvcCore leaving a hung node', () => {
  let browser: Browser;
  let hostServer: PlayerPage;
  let hostOrigin: string;
  let t: TestApp;
  let relay: TcpRelay;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    hostServer = await startPlayerPage();
    hostOrigin = hostServer.origin;
    await buildSdk();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    hostServer?.close();
  });
  beforeEach(async () => {
    relay = await startTcpRelay();
    t = await startTestApp({ listen: true, config: { realtime: { heartbeatIntervalMs: HEARTBEAT_MS } } });
    // The viewer reaches the realtime service through the relay, as through a load balancer.
    relay.target(t.url);
    t.services.config.publicUrl = relay.url;
    context = await browser.newContext();
    page = await context.newPage();
    page.on('pageerror', (error) => console.error('page error:', error.message));
  });
  afterEach(async () => {
    await context.close();
    await relay.close();
    await t.close();
  });

  const stored = (event: string) => t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq, events: [event] }, { limit: 100 });

  it('leaves a socket that fell silent without closing, and resumes its session on a new one', async () => {
    await page.goto(`${hostOrigin}/player`);
    await page.setContent(`<!doctype html><html><body>
      <script src="${t.url}/sdk/svc-core.js"></script>
      <script>
        window.resumed = [];
        SvcSDK.configure({ apiKey: ${JSON.stringify(t.demo.apiKey)} });
        SvcSDK.on('welcome', (message) => window.resumed.push(message.session.resumed));
        window.joined = SvcSDK.setContent('match-1').then(() => 'ok', (e) => e.code + ': ' + e.message);
      </script></body></html>`);
    expect(await page.evaluate(() => (window as unknown as Player).joined)).toBe('ok');
    expect(await page.evaluate(() => (window as unknown as Player).resumed)).toEqual([false]);
    // (Stored before the node hangs: a batch in flight on the hung socket waits for its ack's timeout.)
    await expect.poll(async () => (await stored('broadcast.joined')).length, { timeout: 10_000 }).toBe(1);
    const connectionsBefore = relay.connections();
    expect(connectionsBefore).toBeGreaterThan(0);

    // The node hangs: its socket stays open and nothing passes any more, either way.
    relay.freeze();
    await page.waitForFunction(() => (window as unknown as Player).resumed.length >= 2, undefined, { timeout: 10_000 });
    expect(await page.evaluate(() => (window as unknown as Player).resumed)).toEqual([false, true]);
    expect(relay.connections()).toBeGreaterThan(connectionsBefore);

    // The new socket carries the session on: one joined, and what is tracked now is stored.
    const eventId = await page.evaluate(() => (window as unknown as Player).SvcSDK.track('product.tapped', { data: { productId: 'p1' } }));
    await expect.poll(async () => (await stored('product.tapped')).map((row) => row.eventId), { timeout: 10_000 }).toEqual([eventId]);
    const joined = await stored('broadcast.joined');
    expect(joined).toHaveLength(1);
    expect((await stored('broadcast.left')).length).toBe(0);
  });
});
