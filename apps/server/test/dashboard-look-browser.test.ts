import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { browserAvailable } from './browser';
import type { TestApp } from './test-app';
import { startFixtureApp, useDashboardBrowser } from './dashboard-test-bed';

const AXE_SOURCE: string = createRequire(import.meta.url)('axe-core').source;
/** Each page: its path, what shows it is ready, and its name (the screenshots are taken by dashboard-every-page-browser.test.ts). */
const PAGES = [
  ['/?from=2026-11-10&to=2026-11-11', () => '[data-testid="unique-viewers"]', 'overview'],
  ['/events', () => 'main table', 'events'],
  ['/broadcasts', () => 'main form', 'broadcasts'],
  ['/rejected', () => 'main .empty, main .panel', 'rejected'],
  ['/settings', () => 'main form', 'settings'],
  ['/nope', () => 'main h1', 'not-found'],
] as const;

/** What the dashboard looks like: themes, small screens, accessibility. */
describe.runIf(browserAvailable())('dashboard look in a real browser', () => {
  let browser: Browser;
  let t: TestApp;

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    t = await startFixtureApp();
  });
  afterEach(async () => t.close());

  async function loggedIn(options: { width: number; height: number; colorScheme?: 'light' | 'dark' }): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: options.width, height: options.height }, colorScheme: options.colorScheme ?? 'light' });
    const response = await context.request.post(`${t.url}/v1/session`, { data: { token: t.demo.adminToken } });
    expect(response.status()).toBeLessThan(300);
    return context.newPage();
  }
  const background = (page: Page) => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);

  it('follows the system theme, and the toggle switches and remembers the other one', async () => {
    const page = await loggedIn({ width: 1440, height: 900, colorScheme: 'dark' });
    await page.goto(`${t.url}/events`);
    const toggle = page.getByRole('button', { name: 'Dark mode' });
    await expect.poll(() => toggle.getAttribute('aria-pressed')).toBe('true');
    expect(await background(page)).toBe('rgb(18, 17, 32)');
    await toggle.click();
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    expect(await background(page)).toBe('rgb(246, 245, 251)');
    await page.reload();
    await expect.poll(() => page.getByRole('button', { name: 'Dark mode' }).getAttribute('aria-pressed')).toBe('false');
    expect(await background(page)).toBe('rgb(246, 245, 251)');
    await page.context().close();
  });

  it('keeps live mode in the URL: a shared link opens the overview live', async () => {
    const page = await loggedIn({ width: 1440, height: 900 });
    await page.goto(`${t.url}/?from=2026-11-10&to=2026-11-11`);
    const live = page.getByRole('switch', { name: 'Live' });
    await live.check();
    await expect.poll(() => new URL(page.url()).searchParams.get('live')).toBe('1');
    expect(new URL(page.url()).searchParams.get('from')).toBe('2026-11-10');
    await page.getByLabel('Country', { exact: true }).fill('DE');
    await page.getByLabel('Country', { exact: true }).press('Enter');
    await expect.poll(() => new URL(page.url()).searchParams.get('country')).toBe('DE');
    expect(new URL(page.url()).searchParams.get('live')).toBe('1');
    const streams: string[] = [];
    page.on('request', (r) => void (r.url().includes('/v1/analytics/live') && streams.push(r.url())));
    await page.reload();
    await expect.poll(() => live.isChecked()).toBe(true);
    await expect.poll(() => streams.length).toBeGreaterThan(0);
    expect(await page.getByText('● Live').count()).toBe(0);
    await live.uncheck();
    await expect.poll(() => new URL(page.url()).searchParams.get('live')).toBeNull();
    await page.context().close();
  });

  it('fits every page into 360 px with the whole nav visible, and nothing scrolls sideways at 1440 and 1920', async () => {
    for (const [width, height] of [[360, 740], [1440, 900], [1920, 1080]] as const) {
      const page = await loggedIn({ width, height });
      for (const [path, ready] of PAGES) {
        await page.goto(`${t.url}${path}`);
        await page.locator(ready()).first().waitFor();
        const where = `${path} at ${width}px`;
        const wide = await page.evaluate((w) => Array.from(document.querySelectorAll('main *')).filter((el) => el.getBoundingClientRect().right > w + 1).slice(0, 5).map((el) => `${el.tagName}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`), width);
        expect(await page.evaluate(() => document.documentElement.scrollWidth), `${where}: ${wide.join('; ')}`).toBeLessThanOrEqual(width);
        for (const link of await page.getByRole('navigation', { name: 'Pages' }).getByRole('link').all()) {
          const box = (await link.boundingBox())!;
          expect(box.x + box.width, `${where}: ${await link.textContent()}`).toBeLessThanOrEqual(width);
        }
        // Tables may scroll in their own box (.scroll); nothing else inside a panel may.
        const overflowing = await page.evaluate(() =>
          Array.from(document.querySelectorAll("main .panel, main .filters, header")).filter((el) => !el.classList.contains('scroll') && el.scrollWidth > el.clientWidth + 1).map((el) => el.className),
        );
        expect(overflowing, where).toEqual([]);
      }
      await page.context().close();
    }
  }, 120_000);

  it('shows every column of sponsor performance without a sideways scroll: across the row at 1440 px, as cards at 360 px', async () => {
    for (const [width, height] of [[1440, 900], [360, 740]] as const) {
      const page = await loggedIn({ width, height });
      await page.goto(`${t.url}/?from=2026-11-10&to=2026-11-11`);
      const table = page.getByTestId('sponsor-table');
      await table.waitFor();
      const sizes = await table.evaluate((el) => {
        const panel = el.closest('.panel')!;
        return { panel: panel.clientWidth, scroll: panel.scrollWidth, right: el.getBoundingClientRect().right, panelRight: panel.getBoundingClientRect().right };
      });
      expect(sizes.scroll, `${width}px`).toBeLessThanOrEqual(sizes.panel + 1);
      expect(sizes.right, `${width}px`).toBeLessThanOrEqual(sizes.panelRight + 1);
      // Conversion and Revenue of the first sponsor are on screen, not behind a scroll.
      const cells = table.locator('tbody tr').first().locator('td');
      for (const index of [5, 6]) {
        const box = (await cells.nth(index).boundingBox())!;
        expect(box.x + box.width, `${width}px, column ${index}`).toBeLessThanOrEqual(width);
      }
      if (width === 360) expect(await cells.nth(5).evaluate((td) => getComputedStyle(td, '::before').content)).toBe('"Conversion"');
      await page.context().close();
    }
  });

  it('has no serious or critical axe violation on any page, in light and dark mode', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const page = await loggedIn({ width: 1440, height: 900, colorScheme });
      for (const [path, ready] of PAGES) {
        await page.goto(`${t.url}${path}`);
        await page.locator(ready()).first().waitFor();
        await page.evaluate(AXE_SOURCE);
        const violations = await page.evaluate(async () => {
          // The tables' own scroll boxes belong to their pages (sponsor table, events, rejects): checked there.
          const result = await (window as unknown as { axe: { run: (c: { exclude: string[][] }) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }).axe.run({ exclude: [['.scroll']] });
          return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
        });
        expect(violations, `${path} in ${colorScheme} mode`).toEqual([]);
      }
      await page.context().close();
    }
  }, 120_000);
});
