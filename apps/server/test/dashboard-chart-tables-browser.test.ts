import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { browserAvailable } from './browser';
import type { TestApp } from './test-app';
import { useLoggedInPage } from './dashboard-test-bed';

/** Every chart of the overview has its numbers in a table that a screen reader and a keyboard reach. */
describe.runIf(browserAvailable())('data tables behind the charts', () => {
  const bed = useLoggedInPage();
  let t: TestApp;
  let page: Page;
  beforeEach(() => void ({ t, page } = bed));

  it('follows every chart (viewers, revenue, funnel, each poll) with its data table', async () => {
    await page.goto(`${t.url}/?from=2026-11-10&to=2026-11-11`);
    await page.getByTestId('unique-viewers').waitFor();
    const charts = await page.locator('.panels .chart').evaluateAll((boxes) =>
      boxes.map((box) => {
        const next = box.nextElementSibling;
        return { panel: box.closest('section')?.getAttribute('aria-label'), table: next?.matches('details.data-table') ? next.querySelector('summary')?.textContent : null };
      }),
    );
    expect(charts).toEqual([
      { panel: 'Viewer count', table: 'Viewers over time: data table' },
      { panel: 'Revenue over time', table: 'Revenue in EUR: data table' },
      { panel: 'Revenue over time', table: 'Revenue in USD: data table' },
      { panel: 'Funnel', table: 'Funnel: data table' },
      { panel: 'Poll results', table: 'Votes for "Who wins?": data table' },
    ]);
  });

  it('opens a chart table from the keyboard with the numbers of the bars', async () => {
    await page.goto(`${t.url}/?from=2026-11-10&to=2026-11-11`);
    await page.getByTestId('unique-viewers').waitFor();
    const summary = page.getByText('Funnel: data table');
    await summary.focus();
    await page.keyboard.press('Enter');
    const rows = page.getByTestId('funnel-table').locator('tbody tr');
    await expect.poll(() => rows.first().isVisible()).toBe(true);
    expect(await rows.allTextContents()).toEqual(['product.viewed2100.0%', 'cart.item_added150.0%', 'checkout.started1100.0%', 'checkout.completed1100.0%']);
    // The steps in words under the table count their sessions in good English.
    expect(await page.locator('ol.steps li').allTextContents()).toEqual(['product.viewed: 2 sessions (100.0%)', 'cart.item_added: 1 session (50.0%)', 'checkout.started: 1 session (100.0%)', 'checkout.completed: 1 session (100.0%)']);
    const poll = page.getByText('Votes for "Who wins?": data table');
    await poll.focus();
    await page.keyboard.press('Space');
    const pollRows = page.locator('[data-testid^="poll-table-"] tbody tr');
    await expect.poll(() => pollRows.first().isVisible()).toBe(true);
    expect(await pollRows.allTextContents()).toEqual(['A150.0%', 'B150.0%']);
  });
});
