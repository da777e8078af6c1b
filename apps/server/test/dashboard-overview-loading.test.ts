import type { Page, Route } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { browserAvailable } from './browser';
import type { TestApp } from './test-app';
import { useLoggedInPage } from './dashboard-test-bed';

/** How the overview asks for its data: the numbers do not queue behind the filter lists. */
describe.runIf(browserAvailable())('overview loading in a real browser', () => {
  const bed = useLoggedInPage();
  let t: TestApp;
  let page: Page;
  beforeEach(() => void ({ t, page } = bed));

  /** Holds the answers of the filter lists until released; records when the numbers are asked for. */
  async function holdLists(): Promise<{ overviewAsked: () => boolean; release: () => void }> {
    let asked = false;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    page.on('request', (r) => void (new URL(r.url()).pathname === '/v1/analytics/overview' && (asked = true)));
    await page.route(/\/v1\/(campaigns|broadcasts|sponsors)$/, async (route: Route) => {
      const response = await route.fetch();
      await released;
      await route.fulfill({ response }).catch(() => undefined);
    });
    return { overviewAsked: () => asked, release };
  }

  for (const [situation, query, viewers] of [
    ['a range in the URL', '?from=2026-11-10&to=2026-11-11', '3'],
    ['no range in the URL (the last 7 days of the tenant)', '', null],
  ] as const) {
    it(`asks for the numbers while the filter lists are still loading, with ${situation}`, async () => {
      const held = await holdLists();
      await page.goto(`${t.url}/${query}`);
      await expect.poll(held.overviewAsked, { timeout: 5_000 }).toBe(true);
      held.release();
      await page.locator('.panels:not([aria-busy]) > :not(p.muted)').first().waitFor();
      if (viewers) expect(await page.getByTestId('unique-viewers').textContent()).toBe(viewers);
      // The controls show the range the numbers are for (the browser's "now": the tenant's zone is UTC).
      const sixDaysAgo = new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);
      expect(await page.getByLabel('From', { exact: true }).inputValue()).toBe(query ? '2026-11-10' : sixDaysAgo);
    });
  }
});
