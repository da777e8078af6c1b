import type { Browser, Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { loadAnalyticsFixture } from './analytics-fixture';
import { browserAvailable } from './browser';
import { startTestApp, type TestApp } from './test-app';
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { TestViewer } from './ws-client';
import { WebhookReceiver } from './webhook-receiver';
import { useDashboardBrowser } from './dashboard-test-bed';

describe.runIf(browserAvailable())('dashboard in a real browser', () => {
  let browser: Browser;
  let t: TestApp;
  let page: Page;
  let cspViolations: string[];

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    t = await startTestApp({ listen: true, clock: new ManualClock(Date.UTC(2026, 10, 21, 12)), config: { webhookAllowPrivate: true } });
    await loadAnalyticsFixture(t.app, t.demo.adminToken);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    cspViolations = [];
    page.on('console', (message) => {
      if (/Content[- ]Security[- ]Policy/i.test(message.text())) cspViolations.push(message.text());
    });
  });
  afterEach(async () => {
    await page.context().close();
    await t.close();
    // Every page of the dashboard works within its Content-Security-Policy.
    expect(cspViolations).toEqual([]);
  });

  const text = (testId: string) => page.getByTestId(testId).textContent();
  async function logIn(token = t.demo.adminToken): Promise<void> {
    await page.goto(`${t.url}/?from=2026-11-10&to=2026-11-11`);
    await page.getByLabel('Admin token').fill(token);
    await page.getByRole('button', { name: 'Log in' }).click();
  }

  it('refuses a wrong token', async () => {
    await logIn(t.demo.apiKey);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('unknown or revoked');
    expect(await page.getByTestId('unique-viewers').count()).toBe(0);
  });

  it('shows the hand-computed numbers, follows the filters in the URL, and restores them on reload', async () => {
    await logIn();
    await expect.poll(() => text('unique-viewers')).toBe('3');
    expect(await text('engagement-rate')).toBe('66.7%');
    expect(await text('gross-EUR')).toBe('€25.00');
    expect(await text('orders-EUR')).toBe('2');

    await page.getByLabel('Country', { exact: true }).fill('de');
    await page.getByLabel('Country', { exact: true }).press('Enter');
    await expect.poll(() => text('unique-viewers')).toBe('2');
    expect(await text('engagement-rate')).toBe('50.0%');
    expect(page.url()).toContain('country=DE');

    await page.getByLabel('Broadcast', { exact: true }).selectOption('b2');
    await expect.poll(() => page.url()).toContain('broadcastId=b2');
    await expect.poll(() => text('gross-USD')).toBe('$100.00');

    await page.reload();
    await expect.poll(() => text('gross-USD')).toBe('$100.00');
    expect(await page.getByLabel('Broadcast', { exact: true }).inputValue()).toBe('b2');
    expect(await page.getByLabel('Country', { exact: true }).inputValue()).toBe('Germany');

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Admin token').waitFor();
  });

  it('changes the numbers and the URL with the campaign, sponsor and date filters', async () => {
    await logIn();
    await expect.poll(() => text('unique-viewers')).toBe('3');
    await page.getByLabel('Campaign', { exact: true }).selectOption('2');
    await expect.poll(() => text('unique-viewers'), { timeout: 4_000 }).toBe('2');
    expect(page.url()).toContain('campaignId=2');
    await page.getByLabel('Campaign', { exact: true }).selectOption('');
    await page.getByLabel('Sponsor', { exact: true }).selectOption('bolt');
    await expect.poll(() => page.getByTestId('gross-EUR').count(), { timeout: 4_000 }).toBe(0);
    expect(await text('gross-USD')).toBe('$100.00');
    expect(page.url()).toContain('sponsorId=bolt');
    await page.getByLabel('Sponsor', { exact: true }).selectOption('');
    await page.getByLabel('From', { exact: true }).fill('2026-11-11');
    await page.getByLabel('From', { exact: true }).dispatchEvent('change');
    await expect.poll(() => text('unique-viewers')).toBe('1');
    expect(page.url()).toContain('from=2026-11-11');
  });

  it('moves the live viewer count within 2 seconds of a viewer joining', async () => {
    await logIn();
    await expect.poll(() => text('live-viewers')).toBe('0');
    await page.locator('input[name=live]').check();
    await page.locator('.live-switch .live-dot').waitFor();
    const joined = Date.now();
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_dashwatch', contentId: 'b1' });
    await expect.poll(() => text('live-viewers'), { timeout: 2_000 }).toBe('1');
    expect(Date.now() - joined).toBeLessThan(2_000);
    viewer.ws.terminate();
  });

  it('downloads CSV and JSON exports that parse', async () => {
    await logIn();
    await page.getByTestId('unique-viewers').waitFor();
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await page.getByText('events shown').waitFor({ timeout: 5_000 });
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-csv').click()]);
    // Marketers open it in spreadsheets: the download asks for formula-like cells neutralised.
    expect(new URL(csv.url()).searchParams.get('csvSafe')).toBe('true');
    const records = parse(readFileSync((await csv.path())!, 'utf8'), { columns: true }) as unknown[];
    expect(records).toHaveLength(23);
    const [ndjson] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-ndjson').click()]);
    const lines = readFileSync((await ndjson.path())!, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(lines).toHaveLength(23);
  });

  it('creates a webhook, sends a test event and shows it in the delivery log', async () => {
    const receiver = await new WebhookReceiver().start();
    try {
      page.on('dialog', (dialog) => void dialog.accept());
      await logIn();
      await page.getByTestId('unique-viewers').waitFor();
      await page.getByRole('link', { name: 'Settings', exact: true }).click();
      await page.getByLabel('Webhook URL').fill(receiver.url);
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
      await page.getByRole('button', { name: 'Send test' }).click();
      await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Test delivered (200');
      await expect.poll(() => page.getByTestId('delivery-status').first().textContent()).toBe('delivered');
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.stop();
    }
  });

  it('shows and hides an overlay from the broadcasts page', async () => {
    await logIn();
    await page.getByTestId('unique-viewers').waitFor();
    await page.getByRole('link', { name: 'Broadcasts', exact: true }).click();
    await page.getByRole('button', { name: 'b2', exact: true }).click();
    await page.getByLabel('Poll question').fill('Best goal?');
    await page.getByLabel('Poll options').fill('First\nSecond');
    await page.getByRole('button', { name: 'Create overlay' }).click();
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_dashcontrol', contentId: 'b2' });
    await viewer.next((m) => m.type === 'welcome');
    await page.getByRole('button', { name: 'Show' }).click();
    expect(await viewer.next((m) => m.type === 'overlay.show')).toMatchObject({ overlay: { question: 'Best goal?', options: ['First', 'Second'] } });
    await page.getByRole('button', { name: 'Hide' }).click();
    await viewer.next((m) => m.type === 'overlay.hide');
    viewer.ws.terminate();
  });
});
