import type { Browser, Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { browserAvailable } from './browser';
import { accessibilityProblems, layoutProblems, newDashboardPage, PAGE_VIEWPORTS } from './dashboard-page-checks';
import { startTestApp, type TestApp } from './test-app';
import { WebhookReceiver } from './webhook-receiver';
import { useDashboardBrowser } from './dashboard-test-bed';

describe.runIf(browserAvailable())('dashboard Settings page', () => {
  let browser: Browser;
  let t: TestApp;
  let page: Page;
  let receiver: WebhookReceiver;

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    t = await startTestApp({ listen: true, clock: new ManualClock(Date.UTC(2026, 10, 21, 12)), config: { webhookAllowPrivate: true } });
    receiver = await new WebhookReceiver().start();
  });
  afterEach(async () => {
    await page?.context().close();
    await receiver.stop();
    await t.close();
  });

  async function open(viewport: { width: number; height: number } = { width: 1280, height: 900 }, forAxe = false, colorScheme: 'light' | 'dark' = 'light'): Promise<void> {
    page = await newDashboardPage(browser, viewport, { forAxe, colorScheme });
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${t.url}/settings`);
    await page.getByLabel('Admin token').fill(t.demo.adminToken);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor({ timeout: 10_000 });
  }
  const endpointRow = () => page.locator(`tr[data-endpoint="${receiver.url}"]`);

  it('adds an endpoint for chosen event types and shows its secret in a dialog to copy, never in the page', { timeout: 60_000 }, async () => {
    await open();
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByText('Event types: all').click();
    await page.getByLabel('poll.voted').check();
    await page.getByLabel('checkout.completed').check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog', { name: 'Signing secret of the new endpoint' });
    await dialog.waitFor();
    const secret = (await dialog.getByTestId('secret-value').textContent())!;
    expect(secret).toMatch(/^whsec_/);
    await dialog.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => dialog.getByRole('status').textContent()).toMatch(/Copied|Selected/);
    await dialog.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toContain(secret);
    expect(await endpointRow().textContent()).toContain('poll.voted, checkout.completed');

    const listed = await t.app.inject({ url: '/v1/webhooks', headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    expect(listed.json().data[0].eventTypes).toEqual(['poll.voted', 'checkout.completed']);

    await endpointRow().getByRole('button', { name: 'Reveal secret' }).click();
    expect(await page.getByRole('dialog', { name: 'Signing secret' }).getByTestId('secret-value').textContent()).toBe(secret);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
  });

  it('refuses a bad URL beside the field, not in an alert', async () => {
    await open();
    await page.getByLabel('Webhook URL').fill('ftp://example.com/x');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expect.poll(() => page.locator('#webhook-url-error').textContent()).not.toBe('');
    expect(await page.getByLabel('Webhook URL').getAttribute('aria-invalid')).toBe('true');
  });

  it('sends a test, shows the delivery log with its headers and status filter, disables, enables and deletes the endpoint', { timeout: 60_000 }, async () => {
    await open();
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('button', { name: 'Close' }).click();
    await endpointRow().getByRole('button', { name: 'Send test' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Test delivered (200');
    const log = page.getByTestId('delivery-log');
    await expect.poll(() => log.getByTestId('delivery-status').first().textContent()).toBe('delivered');
    for (const header of ['Created (UTC)', 'Event', 'Status', 'Response', 'Attempts', 'Latency']) {
      expect(await log.getByRole('columnheader', { name: header, exact: true }).count()).toBe(1);
    }
    expect(await log.locator('tbody tr').first().textContent()).toContain('HTTP 200');
    expect(await log.getByRole('status').textContent()).toBe('1 delivery shown, newest first.');
    await log.getByLabel('Delivery status').selectOption('failed');
    await expect.poll(() => log.getByRole('status').textContent()).toBe('No deliveries for this filter.');
    await log.getByLabel('Delivery status').selectOption('delivered');
    await expect.poll(() => log.getByTestId('delivery-status').count()).toBe(1);

    await endpointRow().getByRole('button', { name: 'Disable' }).click();
    await expect.poll(() => endpointRow().textContent()).toContain('Disabled');
    await endpointRow().getByRole('button', { name: 'Enable' }).click();
    await expect.poll(() => endpointRow().textContent()).toContain('Enabled');
    await endpointRow().getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No endpoints yet.').waitFor();
    const listed = await t.app.inject({ url: '/v1/webhooks', headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    expect(listed.json().data).toEqual([]);
  });

  it('labels the feature flags for people and masks the commerce key until shown', async () => {
    await open();
    for (const label of ['Polls', 'Contests', 'Line-ups', 'Sponsor moments', 'Shop and payments']) {
      expect(await page.getByLabel(label, { exact: true }).count()).toBe(1);
    }
    expect(await page.getByText('sponsorMoments').count()).toBe(0);
    const key = page.getByLabel('Commerce API key', { exact: true });
    expect(await key.getAttribute('type')).toBe('password');
    await page.getByRole('button', { name: 'Show the commerce key' }).click();
    expect(await key.getAttribute('type')).toBe('text');
    expect(await page.getByRole('button', { name: 'Show the commerce key' }).getAttribute('aria-pressed')).toBe('true');
  });

  it('explains a refused setting beside its field, and saves the time zone', async () => {
    await open();
    const save = page.getByRole('button', { name: 'Save', exact: true });
    const markets = page.getByLabel('Markets', { exact: true });
    const retention = page.getByLabel('Keep events for (months)', { exact: true });
    const timeZone = page.getByLabel('Time zone', { exact: true });
    const invalid = () => page.locator('form[aria-label="Runtime config and retention"] [aria-invalid="true"]').evaluateAll((els) => els.map((el) => el.getAttribute('aria-label')));

    await markets.fill('DE, Germany');
    await save.click();
    await expect.poll(() => page.locator('#settings-markets-error').textContent()).toBe('must be two-letter country codes such as DE');
    expect(await markets.getAttribute('aria-describedby')).toBe('settings-markets-error');
    expect(await invalid()).toEqual(['Markets']);

    await markets.fill('DE, AT');
    await retention.fill('0');
    await save.click();
    await expect.poll(() => page.locator('#settings-retention-error').textContent()).toBe('must be at least 1');
    expect(await page.locator('#settings-markets-error').textContent()).toBe('');
    expect(await invalid()).toEqual(['Keep events for (months)']);

    await retention.fill('24');
    await timeZone.fill('Mars/Olympus');
    await save.click();
    await expect.poll(() => page.locator('#settings-time-zone-error').textContent()).toContain('IANA time zone');
    expect(await invalid()).toEqual(['Time zone']);

    await timeZone.fill('Europe/Berlin');
    await save.click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Saved');
    expect(await invalid()).toEqual([]);
    const stored = (await t.app.inject({ url: '/v1/settings', headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json();
    expect([stored.timeZone, stored.retentionMonths, stored.availableMarkets]).toEqual(['Europe/Berlin', 24, ['DE', 'AT']]);
  });

  for (const viewport of PAGE_VIEWPORTS) {
    it(`fits ${viewport.width}×${viewport.height} without a sideways scroll and passes axe, delivery log open`, { timeout: 60_000 }, async () => {
      await open(viewport, true);
      await page.getByLabel('Webhook URL').fill(receiver.url);
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByRole('button', { name: 'Close' }).click();
      await endpointRow().getByRole('button', { name: 'Send test' }).click();
      await page.getByTestId('delivery-status').first().waitFor();
      await page.getByText('Event types: all').click();
      expect(await layoutProblems(page)).toEqual([]);
      expect(await accessibilityProblems(page)).toEqual([]);
    });
  }

  it('passes axe in dark mode, with a refused URL shown beside its field', async () => {
    await open({ width: 1440, height: 900 }, true, 'dark');
    await page.getByLabel('Webhook URL').fill('ftp://example.com/x');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expect.poll(() => page.locator('#webhook-url-error').textContent()).not.toBe('');
    expect(await accessibilityProblems(page)).toEqual([]);
  });
});
