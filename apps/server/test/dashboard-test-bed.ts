import type { Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
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
