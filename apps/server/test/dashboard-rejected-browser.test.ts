import type { Browser, Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { browserAvailable } from './browser';
import { accessibilityProblems, layoutProblems, newDashboardPage, PAGE_VIEWPORTS } from './dashboard-page-checks';
import { startTestApp, type TestApp } from './test-app';
import { useDashboardBrowser } from './dashboard-test-bed';

describe.runIf(browserAvailable())('dashboard Rejected events page', () => {
  let browser: Browser;
  let t: TestApp;
  let page: Page;

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    t = await startTestApp({ listen: true });
    // Refused events with long reasons: what the page must show without a sideways scroll.
    const events = [
      { event: 'poll.voted', eventId: crypto.randomUUID(), timestamp: new Date().toISOString(), broadcastId: 'b1', data: {} },
      { event: 'no.such_event_with_a_rather_long_name_that_goes_on', eventId: crypto.randomUUID(), timestamp: new Date().toISOString(), sessionId: 'svc_x', broadcastId: 'b1', data: {} },
    ];
    const answer = await t.app.inject({ method: 'POST', url: '/v1/events', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: { events } });
    expect(answer.json().rejected).toHaveLength(2);
  });
  afterEach(async () => {
    await page?.context().close();
    await t.close();
  });

  for (const viewport of PAGE_VIEWPORTS) {
    it(`lists the rejects with their reasons at ${viewport.width}×${viewport.height}, without a sideways scroll, passing axe`, { timeout: 60_000 }, async () => {
      page = await newDashboardPage(browser, viewport, { forAxe: true });
      await page.goto(`${t.url}/rejected`);
      await page.getByLabel('Admin token').fill(t.demo.adminToken);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByTestId('rejected-table').waitFor({ timeout: 10_000 });
      expect(await page.getByTestId('rejected-table').locator('tbody tr').count()).toBe(2);
      expect(await page.getByTestId('rejected-table').textContent()).toContain('missing_field');
      expect(await layoutProblems(page)).toEqual([]);
      expect(await accessibilityProblems(page)).toEqual([]);
    });
  }
});
