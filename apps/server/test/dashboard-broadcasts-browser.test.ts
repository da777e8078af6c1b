import type { Browser, Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { browserAvailable } from './browser';
import { accessibilityProblems, layoutProblems, newDashboardPage, PAGE_VIEWPORTS } from './dashboard-page-checks';
import type { TestApp } from './test-app';
import { TestViewer } from './ws-client';
import { startFixtureApp, useDashboardBrowser } from './dashboard-test-bed';

describe.runIf(browserAvailable())('dashboard Broadcasts page', () => {
  let browser: Browser;
  let t: TestApp;
  let page: Page;

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    t = await startFixtureApp();
  });
  afterEach(async () => {
    await page?.context().close();
    await t.close();
  });

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  async function open(path = '/broadcasts', viewport: { width: number; height: number } = { width: 1280, height: 900 }, forAxe = false, colorScheme: 'light' | 'dark' = 'light'): Promise<void> {
    page = await newDashboardPage(browser, viewport, { forAxe, colorScheme });
    await page.goto(`${t.url}${path}`);
    await page.getByLabel('Admin token').fill(t.demo.adminToken);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'New broadcast' }).waitFor({ timeout: 10_000 });
  }

  it('names each campaign, shows figures of a broadcast and links to the overview filtered on it', { timeout: 60_000 }, async () => {
    await open();
    expect(await page.locator('li[data-broadcast="b2"]').textContent()).toContain('Finals');
    await page.getByRole('button', { name: 'b1', exact: true }).click();
    await expect.poll(() => page.getByTestId('figure-unique').textContent()).toBe('2');
    expect(await page.getByTestId('figure-votes').textContent()).toBe('2');
    expect(await page.getByTestId('figure-revenue-EUR').textContent()).toBe('€25.00');
    expect(await page.getByTestId('broadcast-figures').textContent()).toContain('Engagement');
    // Sponsors by name, not id.
    expect(await page.locator('section[data-broadcast="b1"] table').first().textContent()).toContain('Acme Sports');
    expect(page.url()).toContain('broadcast=b1');

    await page.getByTestId('overview-link').click();
    await expect.poll(() => page.url()).toContain('broadcastId=b1');
    expect(new URL(page.url()).pathname).toBe('/');
  });

  it('shows the figures of the days chosen (the tenant\'s days, in the URL) and links to the overview of those days', { timeout: 60_000 }, async () => {
    await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin(), payload: { timeZone: 'Asia/Tokyo' } });
    await open('/broadcasts?broadcast=b1&from=2026-11-10&to=2026-11-10');
    await expect.poll(() => page.getByTestId('figure-unique').textContent()).toBe('2');
    expect(await page.getByTestId('figure-range').textContent()).toBe('figures of 2026-11-10 to 2026-11-10 (Asia/Tokyo)');
    expect(await page.getByTestId('figure-time-zone').textContent()).toBe('Days in Asia/Tokyo');
    // 2026-11-11 in Tokyo starts at 15:00 UTC on the 10th, after b1's sessions.
    await page.getByLabel('Figures to', { exact: true }).fill('2026-11-11');
    await page.getByLabel('Figures from', { exact: true }).fill('2026-11-11');
    await expect.poll(() => page.getByTestId('figure-range').textContent()).toBe('figures of 2026-11-11 to 2026-11-11 (Asia/Tokyo)');
    await expect.poll(() => page.getByTestId('figure-unique').textContent()).toBe('0');
    const url = new URL(page.url());
    expect([url.searchParams.get('broadcast'), url.searchParams.get('from'), url.searchParams.get('to')]).toEqual(['b1', '2026-11-11', '2026-11-11']);
    const overview = new URL((await page.getByTestId('overview-link').getAttribute('href'))!, t.url).searchParams;
    expect([overview.get('broadcastId'), overview.get('from'), overview.get('to')]).toEqual(['b1', '2026-11-11', '2026-11-11']);
    const listLink = new URL((await page.getByRole('link', { name: 'Overview of b2' }).getAttribute('href'))!, t.url).searchParams;
    expect([listLink.get('broadcastId'), listLink.get('from'), listLink.get('to')]).toEqual(['b2', '2026-11-11', '2026-11-11']);
    await page.reload();
    await expect.poll(() => page.getByTestId('figure-range').textContent()).toBe('figures of 2026-11-11 to 2026-11-11 (Asia/Tokyo)');
    expect(await page.getByLabel('Figures from', { exact: true }).inputValue()).toBe('2026-11-11');
  });

  it('keeps one live stream for the open broadcast when its days change', { timeout: 60_000 }, async () => {
    page = await newDashboardPage(browser, { width: 1280, height: 900 });
    // Counts the live streams the page has open.
    await page.addInitScript(() => {
      const Native = window.EventSource;
      const w = window as unknown as { openStreams: number };
      w.openStreams = 0;
      window.EventSource = class extends Native {
        constructor(url: string | URL, init?: EventSourceInit) {
          super(url, init);
          w.openStreams++;
        }
        override close(): void {
          if (this.readyState !== Native.CLOSED) w.openStreams--;
          super.close();
        }
      } as typeof EventSource;
    });
    expect((await page.context().request.post(`${t.url}/v1/session`, { data: { token: t.demo.adminToken } })).status()).toBeLessThan(300);
    await page.goto(`${t.url}/broadcasts?broadcast=b1&from=2026-11-10&to=2026-11-11`);
    await expect.poll(() => page.getByTestId('figure-unique').textContent()).toBe('2');
    await page.getByLabel('Figures from', { exact: true }).fill('2026-11-11');
    await expect.poll(() => page.getByTestId('figure-unique').textContent()).toBe('0');
    await page.getByLabel('Figures from', { exact: true }).fill('2026-11-10');
    await expect.poll(() => page.getByTestId('figure-unique').textContent()).toBe('2');
    expect(await page.evaluate(() => (window as unknown as { openStreams: number }).openStreams)).toBe(1);
  });

  it('updates the live state by itself: viewers joining and an overlay shown elsewhere', { timeout: 60_000 }, async () => {
    await open('/broadcasts?broadcast=b2');
    await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('No one watching');
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_pagewatch', contentId: 'b2' });
    await viewer.next((m) => m.type === 'welcome');
    await expect.poll(() => page.getByTestId('live-state').textContent(), { timeout: 5_000 }).toContain('1 watching now');
    // The list says it too, beside the broadcast, and not beside the others.
    await expect.poll(() => page.getByTestId('watching-b2').textContent(), { timeout: 8_000 }).toBe('● 1 watching now');
    expect(await page.getByTestId('watching-b1').textContent()).toBe('No one watching');

    const created = await t.app.inject({ method: 'POST', url: '/v1/broadcasts/b2/overlays', headers: admin(), payload: { type: 'contest', title: 'Win a shirt' } });
    const overlayId = created.json().id as string;
    await t.app.inject({ method: 'POST', url: `/v1/broadcasts/b2/overlays/${overlayId}/show`, headers: admin() });
    await expect.poll(() => page.getByTestId('overlays').textContent(), { timeout: 8_000 }).toContain('● Shown');
    viewer.ws.terminate();
    await expect.poll(() => page.getByTestId('live-state').textContent(), { timeout: 5_000 }).toBe('No one watching');
  });

  it('creates every overlay type, and shows validation problems beside their fields, never in an alert', { timeout: 90_000 }, async () => {
    const alerts: string[] = [];
    await open('/broadcasts?broadcast=b2');
    page.on('dialog', (dialog) => {
      alerts.push(dialog.message());
      void dialog.dismiss();
    });
    const form = page.getByRole('form', { name: 'New overlay' });
    const create = () => form.getByRole('button', { name: 'Create overlay' }).click();
    const created = () => form.getByRole('status').textContent();

    // An empty poll: each problem beside its field.
    await create();
    await expect.poll(() => form.getByLabel('Poll question').getAttribute('aria-invalid')).toBe('true');
    expect(await form.locator('#' + (await form.getByLabel('Poll question').getAttribute('aria-describedby'))).textContent()).toBe('cannot be empty');
    expect(await form.getByLabel('Poll options').getAttribute('aria-invalid')).toBe('true');
    await form.getByLabel('Poll question').fill('Best goal?');
    await form.getByLabel('Poll options').fill('First\nSecond');
    await create();
    await expect.poll(created).toContain('Poll created');
    expect(await form.getByLabel('Poll question').getAttribute('aria-invalid')).toBeNull();

    await form.getByLabel('Overlay type').selectOption('contest');
    await form.getByLabel('Contest title').fill('Win a shirt');
    await create();
    await expect.poll(created).toContain('Contest created');

    await form.getByLabel('Overlay type').selectOption('lineup');
    await form.getByLabel('Line-up items').fill('Kick-off\nHalf time');
    await create();
    await expect.poll(created).toContain('Line-up created');

    await form.getByLabel('Overlay type').selectOption('sponsor_moment');
    await form.getByLabel('Message').fill('Drink Bolt');
    await form.getByLabel('Link (optional)').fill('not a link');
    await create();
    await expect.poll(() => form.getByLabel('Link (optional)').getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByLabel('Sponsor', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await form.getByLabel('Sponsor', { exact: true }).selectOption({ label: 'Bolt Energy' });
    await form.getByLabel('Link (optional)').fill('https://bolt.example/');
    await create();
    await expect.poll(created).toContain('Sponsor moment created');

    await form.getByLabel('Overlay type').selectOption('product');
    await form.getByLabel('Product name').fill('Jersey');
    await form.getByLabel('Price').fill('59.9');
    await form.getByLabel('Sponsor (optional)').selectOption({ label: 'Acme Sports' });
    await create();
    await expect.poll(created).toContain('Product created');

    const overlays = (await t.app.inject({ url: '/v1/broadcasts/b2/overlays', headers: admin() })).json().data as Array<{ type: string }>;
    expect(overlays.map((o) => o.type).sort()).toEqual(['contest', 'lineup', 'poll', 'product', 'sponsor_moment']);
    await expect.poll(() => page.getByTestId('overlays').locator('tbody tr').count()).toBe(5);
    expect(await page.getByTestId('overlays').textContent()).toContain('Bolt Energy');
    expect(alerts).toEqual([]);
  });

  it('shows a refused broadcast id beside its field', async () => {
    await open();
    await page.getByLabel('New broadcast id').fill('b1');
    await page.getByRole('button', { name: 'Create broadcast' }).click();
    await expect.poll(() => page.getByRole('form', { name: 'New broadcast' }).getByRole('alert').textContent()).not.toBe('');
  });

  for (const viewport of PAGE_VIEWPORTS) {
    it(`fits ${viewport.width}×${viewport.height} without a sideways scroll and passes axe, a broadcast open`, { timeout: 60_000 }, async () => {
      await open('/broadcasts?broadcast=b1', viewport, true);
      await page.getByTestId('figure-unique').waitFor();
      await page.getByTestId('overlays').locator('tbody tr').first().waitFor();
      expect(await layoutProblems(page)).toEqual([]);
      expect(await accessibilityProblems(page)).toEqual([]);
    });
  }

  it('passes axe in dark mode, a broadcast open', async () => {
    await open('/broadcasts?broadcast=b1', { width: 1440, height: 900 }, true, 'dark');
    await page.getByTestId('figure-unique').waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
  });
});
