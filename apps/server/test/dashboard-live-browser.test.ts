import { uuidv7 } from 'uuidv7';
import type { Browser, Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { D11 } from './analytics-fixture';
import { browserAvailable } from './browser';
import type { TestApp } from './test-app';
import { startFixtureApp, useDashboardBrowser } from './dashboard-test-bed';

const JOINS = 12;
const JOIN_EVERY_MS = 150;

/** Live mode under a stream of updates. */
describe.runIf(browserAvailable())('dashboard live mode in a real browser', () => {
  let browser: Browser;
  let t: TestApp;
  let page: Page;

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    t = await startFixtureApp();
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await context.request.post(`${t.url}/v1/session`, { data: { token: t.demo.adminToken } });
    page = await context.newPage();
  });
  afterEach(async () => {
    await page.context().close();
    await t.close();
  });

  it('renders at most once a second under a burst of updates, and only the panels that changed', async () => {
    await page.goto(`${t.url}/?from=2026-11-10&to=2026-11-11&live=1`);
    await expect.poll(() => page.getByTestId('unique-viewers').textContent()).toBe('3');
    await page.evaluate(() => {
      const w = window as unknown as { renders: number[]; sponsors: Element | null };
      w.renders = [];
      w.sponsors = document.querySelector('[aria-label="Sponsor performance"]');
      new MutationObserver(() => w.renders.push(performance.now())).observe(document.querySelector('.panels')!, { childList: true });
    });
    for (let i = 0; i < JOINS; i++) {
      const event = { event: 'broadcast.joined', eventId: uuidv7(), timestamp: `${D11}12:00:${String(i).padStart(2, '0')}Z`, sessionId: `svc_burst${i}`, broadcastId: 'b1', country: 'DE', userId: null, data: {} };
      const response = await t.app.inject({ method: 'POST', url: '/v1/events', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: { events: [event] } });
      expect(response.statusCode).toBeLessThan(300);
      await new Promise((resolve) => setTimeout(resolve, JOIN_EVERY_MS));
    }
    await expect.poll(() => page.getByTestId('unique-viewers').textContent(), { timeout: 5_000 }).toBe(String(3 + JOINS));
    const { renders, sponsorsKept } = await page.evaluate(() => {
      const w = window as unknown as { renders: number[]; sponsors: Element | null };
      return { renders: w.renders, sponsorsKept: w.sponsors !== null && w.sponsors === document.querySelector('[aria-label="Sponsor performance"]') };
    });
    expect(renders.length).toBeGreaterThan(0);
    for (let i = 1; i < renders.length; i++) expect(renders[i]! - renders[i - 1]!).toBeGreaterThanOrEqual(950);
    expect(sponsorsKept).toBe(true);
  });
});
