import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import type { Browser, Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EVENTS } from './analytics-fixture';
import { browserAvailable } from './browser';
import { accessibilityProblems, layoutProblems, newDashboardPage, PAGE_VIEWPORTS } from './dashboard-page-checks';
import type { TestApp } from './test-app';
import { startFixtureApp, useDashboardBrowser } from './dashboard-test-bed';

describe.runIf(browserAvailable())('dashboard Events page', () => {
  let browser: Browser;
  let t: TestApp;
  let page: Page;

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    t = await startFixtureApp();
    // A formula-like value, to see the CSV made safe for spreadsheets.
    await t.app.inject({
      method: 'POST', url: '/v1/events', headers: { authorization: `Bearer ${t.demo.adminToken}` },
      payload: { events: [{ event: 'broadcast.joined', eventId: '0193a000-0000-7000-8000-000000000001', timestamp: '2026-11-09T08:00:00Z', sessionId: 'svc_formula', broadcastId: 'b1', userId: '=HYPERLINK("x")', data: {} }] },
    });
  });
  afterEach(async () => {
    await page?.context().close();
    await t.close();
  });

  async function open(path: string, viewport: { width: number; height: number } = { width: 1280, height: 900 }, forAxe = false, colorScheme: 'light' | 'dark' = 'light'): Promise<void> {
    page = await newDashboardPage(browser, viewport, { forAxe, colorScheme });
    await page.goto(`${t.url}${path}`);
    await page.getByLabel('Admin token').fill(t.demo.adminToken);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText('events shown').waitFor({ timeout: 10_000 });
  }
  const times = () => page.getByTestId('events-table').locator('tbody tr td:first-child').allTextContents();

  it('lists events newest first and filters by campaign, sponsor, country, user and event type, keeping them in the URL', { timeout: 60_000 }, async () => {
    await open('/events');
    const all = await times();
    expect(all).toHaveLength(EVENTS.length + 1);
    expect(all).toEqual([...all].sort().reverse());
    expect(all[0]).toBe('2026-11-11 10:00:10');

    await page.getByLabel('Campaign', { exact: true }).selectOption({ label: 'Finals' });
    await expect.poll(() => page.url()).toContain('campaignId=2');
    await expect.poll(async () => (await times()).length).toBe(6);

    await page.getByLabel('Campaign', { exact: true }).selectOption('');
    await page.getByLabel('Country', { exact: true }).selectOption({ label: 'France' });
    await expect.poll(async () => (await times()).length).toBe(8);
    expect(page.url()).toContain('country=FR');

    await page.getByText('Event types: all').click();
    await page.getByLabel('poll.voted').check();
    await expect.poll(async () => (await times()).length).toBe(1);
    expect(decodeURIComponent(page.url())).toContain('event=poll.voted');

    await page.getByLabel('Country', { exact: true }).selectOption('');
    await page.getByLabel('User id').fill('u1');
    await page.getByLabel('User id').press('Enter');
    await expect.poll(async () => (await times()).length).toBe(2);
    await page.getByLabel('poll.voted').uncheck();
    await page.getByLabel('Sponsor', { exact: true }).selectOption({ label: 'Acme Sports' });
    await expect.poll(async () => (await times()).length).toBe(5);

    // The URL restores the same view.
    await page.reload();
    await page.getByText('events shown').waitFor();
    expect(await times()).toHaveLength(5);
    expect(await page.getByLabel('Sponsor', { exact: true }).inputValue()).toBe('acme');
    expect(await page.getByLabel('User id').inputValue()).toBe('u1');
  });

  it('bounds the date inputs by each other', async () => {
    await open('/events?from=2026-11-10&to=2026-11-10');
    expect(await times()).toHaveLength(18);
    expect(await page.getByLabel('To', { exact: true }).getAttribute('min')).toBe('2026-11-10');
    expect(await page.getByLabel('From', { exact: true }).getAttribute('max')).toBe('2026-11-10');
  });

  it("filters on the tenant's days and shows times in its time zone, downloads included", async () => {
    const patched = await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: { timeZone: 'America/New_York' } });
    expect(patched.statusCode, patched.body).toBe(200);
    await open('/events?from=2026-11-10&to=2026-11-10');
    // Nov 10 in New York is 05:00Z to 05:00Z the next day: S3's events just after midnight UTC are on it, S4's are not.
    const expected = EVENTS.filter((e) => e.timestamp >= '2026-11-10T05:00:00Z' && e.timestamp < '2026-11-11T05:00:00Z');
    expect(expected.some((e) => e.timestamp.startsWith('2026-11-11'))).toBe(true);
    const shown = await times();
    expect(shown).toHaveLength(expected.length);
    // The newest, 2026-11-11 00:02:00Z, is 19:02 the evening before in New York.
    expect(shown[0]).toBe('2026-11-10 19:02:00');
    await expect.poll(() => page.getByTestId('events-table').locator('thead th').first().textContent()).toBe('Time (America/New_York)');
    // The page's URL keeps the plain dates; the export is asked for the local midnights.
    expect(new URL(page.url()).searchParams.get('from')).toBe('2026-11-10');
    const csv = new URL((await page.getByTestId('download-csv').getAttribute('href'))!, t.url).searchParams;
    expect([csv.get('from'), csv.get('to')]).toEqual(['2026-11-10T05:00:00.000Z', '2026-11-11T05:00:00.000Z']);
    const [ndjson] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-ndjson').click()]);
    expect(readFileSync((await ndjson.path())!, 'utf8').trim().split('\n')).toHaveLength(expected.length);
  });

  it('downloads this view as spreadsheet-safe CSV, NDJSON named .ndjson and a JSON array named .json', async () => {
    await open('/events?country=DE');
    const expected = EVENTS.filter((e) => e.country === 'DE').length;
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-csv').click()]);
    expect(csv.suggestedFilename()).toMatch(/\.csv$/);
    const records = parse(readFileSync((await csv.path())!, 'utf8'), { columns: true }) as Array<{ country: string }>;
    expect(records).toHaveLength(expected);
    expect(records.every((r) => r.country === 'DE')).toBe(true);

    const [ndjson] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-ndjson').click()]);
    expect(ndjson.suggestedFilename()).toMatch(/\.ndjson$/);
    expect(readFileSync((await ndjson.path())!, 'utf8').trim().split('\n').map((l) => JSON.parse(l))).toHaveLength(expected);

    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-json').click()]);
    expect(json.suggestedFilename()).toMatch(/^svc-events-.*\.json$/);
    const array = JSON.parse(readFileSync((await json.path())!, 'utf8')) as Array<{ country: string }>;
    expect(array).toHaveLength(expected);

    // The formula-like user id comes out neutralised in the CSV a spreadsheet opens.
    await page.goto(`${t.url}/events?broadcastId=b1&from=2026-11-09&to=2026-11-09`);
    await page.getByText('1 event shown, newest first').waitFor();
    const [formula] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-csv').click()]);
    const [row] = parse(readFileSync((await formula.path())!, 'utf8'), { columns: true }) as Array<{ userId: string }>;
    expect(row!.userId).toBe(`'=HYPERLINK("x")`);
  });

  for (const viewport of PAGE_VIEWPORTS) {
    it(`fits ${viewport.width}×${viewport.height} without a sideways scroll and passes axe`, async () => {
      await open('/events', viewport, true);
      expect(await layoutProblems(page)).toEqual([]);
      expect(await accessibilityProblems(page)).toEqual([]);
    });
  }

  it('passes axe in dark mode', async () => {
    await open('/events', { width: 1440, height: 900 }, true, 'dark');
    expect(await accessibilityProblems(page)).toEqual([]);
  });
});
