import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { loadAnalyticsFixture } from './analytics-fixture';
import { browserAvailable } from './browser';
import { layoutProblems, newDashboardPage, PAGE_VIEWPORTS } from './dashboard-page-checks';
import { blockingViolations, runAxe } from './overlay-geometry';
import { startTestApp, type TestApp } from './test-app';
import { FIXTURE_NOW_MS, useDashboardBrowser } from './dashboard-test-bed';
import { WebhookReceiver } from './webhook-receiver';

const SCREENSHOTS = join(process.cwd(), 'docs', 'screenshots');
/**
 * Every page of the dashboard: its path, what shows it is ready, what to open on it (Settings:
 * the delivery log of its webhook endpoint), and the name of its screenshots
 * (`dashboard-<name>.png`, `-dark.png`, `-phone.png`).
 */
const PAGES = [
  { name: 'overview', path: '/?from=2026-11-10&to=2026-11-11', ready: '[data-testid="unique-viewers"]' },
  { name: 'events', path: '/events', ready: 'main table' },
  { name: 'broadcasts', path: '/broadcasts', ready: 'main form' },
  { name: 'broadcast-detail', path: '/broadcasts?broadcast=b1&from=2026-11-10&to=2026-11-11', ready: '[data-testid="figure-unique"]' },
  { name: 'rejected', path: '/rejected', ready: '[data-testid="rejected-table"]' },
  { name: 'settings', path: '/settings', ready: 'tr[data-endpoint]', open: async (page: Page) => {
    await page.getByRole('button', { name: /^Delivery log: / }).click();
    await page.getByTestId('delivery-status').first().waitFor({ timeout: 10_000 });
  } },
  { name: 'not-found', path: '/nope', ready: 'main h1' },
] as Array<{ name: string; path: string; ready: string; open?: (page: Page) => Promise<void> }>;
/** The page background of each theme (the run is in the theme it says). */
const BACKGROUND = { light: 'rgb(246, 245, 251)', dark: 'rgb(18, 17, 32)' };

/**
 * Acceptance of the whole dashboard: each page at a phone, laptop and desktop size, in light and
 * dark mode, has nothing that scrolls sideways or is cut off, and no serious or critical axe
 * violation anywhere in the document (navigation, tables and their scroll boxes included);
 * the charts' data tables are checked open. Takes the screenshots of docs/screenshots.
 */
describe.runIf(browserAvailable())('every dashboard page, every size, both themes', () => {
  let browser: Browser;
  let t: TestApp;
  let receiver: WebhookReceiver;

  useDashboardBrowser((b) => (browser = b));
  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    t = await startTestApp({ listen: true, clock: new ManualClock(FIXTURE_NOW_MS), config: { webhookAllowPrivate: true } });
    await loadAnalyticsFixture(t.app, t.demo.adminToken);
    // A webhook endpoint with a delivery, so that Settings shows its endpoint row and delivery log.
    receiver = await new WebhookReceiver().start();
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    const endpoint = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin, payload: { url: receiver.url } });
    expect(endpoint.statusCode).toBe(201);
    expect((await t.app.inject({ method: 'POST', url: `/v1/webhooks/${endpoint.json().id}/test`, headers: admin })).json().delivered).toBe(true);
    // Two refused events, so that the Rejected page shows its table.
    const events = [
      { event: 'poll.voted', eventId: crypto.randomUUID(), timestamp: '2026-11-21T11:00:00Z', broadcastId: 'b1', data: {} },
      { event: 'no.such_event_with_a_rather_long_name_that_goes_on', eventId: crypto.randomUUID(), timestamp: '2026-11-21T11:00:00Z', sessionId: 'svc_x', broadcastId: 'b1', data: {} },
    ];
    const answer = await t.app.inject({ method: 'POST', url: '/v1/events', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: { events } });
    expect(answer.json().rejected).toHaveLength(2);
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
  });

  async function loggedIn(viewport: { width: number; height: number }, colorScheme: 'light' | 'dark'): Promise<Page> {
    const page = await newDashboardPage(browser, viewport, { colorScheme, forAxe: true });
    expect((await page.context().request.post(`${t.url}/v1/session`, { data: { token: t.demo.adminToken } })).status()).toBeLessThan(300);
    return page;
  }

  for (const colorScheme of ['light', 'dark'] as const) {
    for (const viewport of PAGE_VIEWPORTS) {
      it(`${viewport.width}×${viewport.height} in ${colorScheme} mode: no sideways scroll, nothing cut off, no serious axe violation`, { timeout: 120_000 }, async () => {
        const page = await loggedIn(viewport, colorScheme);
        try {
          const screenshot = viewport.width === 360 ? (colorScheme === 'light' ? '-phone' : null) : viewport.width === 1440 ? (colorScheme === 'light' ? '' : '-dark') : null;
          for (const { name, path, ready, open } of PAGES) {
            await page.goto(`${t.url}${path}`);
            await page.locator(ready).first().waitFor({ timeout: 10_000 });
            await open?.(page);
            expect(await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe(BACKGROUND[colorScheme]);
            if (screenshot !== null) await page.screenshot({ path: join(SCREENSHOTS, `dashboard-${name}${screenshot}.png`), fullPage: screenshot === '-phone' });
            // The tables behind the charts are part of the page: checked open.
            await page.evaluate(() => document.querySelectorAll('details.data-table').forEach((d) => ((d as HTMLDetailsElement).open = true)));
            const where = `${path} at ${viewport.width}px, ${colorScheme}`;
            expect(await page.evaluate(() => document.documentElement.scrollWidth), where).toBeLessThanOrEqual(viewport.width);
            expect(await layoutProblems(page), where).toEqual([]);
            expect(blockingViolations(await runAxe(page, 'body')), where).toEqual([]);
          }
        } finally {
          await page.context().close();
        }
      });
    }
  }
});
