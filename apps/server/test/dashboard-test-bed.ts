import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { buildDashboard } from '@svc/dashboard/build';
import { ManualClock } from '@svc/protocol';
import { loadAnalyticsFixture } from './analytics-fixture';
import { launchBrowser } from './browser';
import { startTestApp, type TestApp } from './test-app';

/** The analytics fixture's "now": 2026-11-21 12:00 UTC. */
export const FIXTURE_NOW_MS = Date.UTC(2026, 10, 21, 12);

/**
 * For a dashboard browser test file: builds the dashboard and launches one browser before its
 * tests (handed to `use`), closed after them.
 */
export function useDashboardBrowser(use: (browser: Browser) => void): void {
  let browser: Browser | undefined;
  beforeAll(async () => {
    await buildDashboard();
    browser = await launchBrowser();
    use(browser);
  });
  afterAll(async () => browser?.close());
}

/** A listening test app at the fixture's "now" with the analytics fixture loaded. */
export async function startFixtureApp(): Promise<TestApp> {
  const t = await startTestApp({ listen: true, clock: new ManualClock(FIXTURE_NOW_MS) });
  await loadAnalyticsFixture(t.app, t.demo.adminToken);
  return t;
}

/** What `useLoggedInPage` gives each test: filled before it runs. */
export interface LoggedInPage {
  browser: Browser;
  t: TestApp;
  page: Page;
}

/**
 * For a dashboard browser test file: one browser (as `useDashboardBrowser`), and before each test
 * a fresh fixture app and a page logged in to its dashboard, at 1440×900 unless told; both closed
 * after the test.
 */
export function useLoggedInPage(viewport = { width: 1440, height: 900 }): LoggedInPage {
  const bed = {} as LoggedInPage;
  useDashboardBrowser((browser) => (bed.browser = browser));
  beforeEach(async () => {
    bed.t = await startFixtureApp();
    const context = await bed.browser.newContext({ viewport });
    expect((await context.request.post(`${bed.t.url}/v1/session`, { data: { token: bed.t.demo.adminToken } })).status()).toBeLessThan(300);
    bed.page = await context.newPage();
  });
  afterEach(async () => {
    await bed.page.context().close();
    await bed.t.close();
  });
  return bed;
}
