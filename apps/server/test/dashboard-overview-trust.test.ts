import type { Browser, Page, Route } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { loadAnalyticsFixture } from './analytics-fixture';
import { browserAvailable } from './browser';
import { startTestApp, type TestApp } from './test-app';
import { useDashboardBrowser } from './dashboard-test-bed';

/** The overview under any sequence of actions: what the panels show always matches the controls. */
describe.runIf(browserAvailable())('overview filters in a real browser', () => {
  let browser: Browser;
  let t: TestApp;
  let page: Page;
  let clock: ManualClock;

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 10, 21, 12));
    t = await startTestApp({ listen: true, clock });
    await loadAnalyticsFixture(t.app, t.demo.adminToken);
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  });
  afterEach(async () => {
    await page.context().close();
    await t.close();
  });

  const text = (testId: string) => page.getByTestId(testId).textContent();
  async function logIn(query = 'from=2026-11-10&to=2026-11-11'): Promise<void> {
    await page.goto(`${t.url}/?${query}`);
    await page.getByLabel('Admin token').fill(t.demo.adminToken);
    await page.getByRole('button', { name: 'Log in' }).click();
  }

  it('never shows a slow answer for filters that were changed since', async () => {
    await logIn();
    await expect.poll(() => text('unique-viewers')).toBe('3');
    // The answer for broadcast b1 is held back until the one for b2 has been drawn.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    let delivered!: Promise<unknown>;
    await page.route(/\/v1\/analytics\/overview\?.*broadcastId=b1/, async (route: Route) => {
      held = true;
      const response = await route.fetch();
      await released;
      // Refused by the browser when the page cancelled the request meanwhile.
      delivered = route.fulfill({ response }).catch(() => undefined);
      await delivered;
    });
    const broadcast = page.getByLabel('Broadcast', { exact: true });
    await broadcast.selectOption('b1');
    await expect.poll(() => held).toBe(true);
    await broadcast.selectOption('b2');
    await expect.poll(() => page.getByTestId('gross-EUR').count()).toBe(0);
    expect(await text('gross-USD')).toBe('$100.00');
    release();
    await expect.poll(() => delivered !== undefined).toBe(true);
    await delivered;
    // Time for the page to draw the held answer, were it to draw it.
    await page.waitForTimeout(300);
    expect(await broadcast.inputValue()).toBe('b2');
    expect(page.url()).toContain('broadcastId=b2');
    expect(await page.getByTestId('gross-EUR').count()).toBe(0);
    expect(await page.getByTestId('gross-USD').count()).toBe(1);
  });

  it('cannot make an inverted range: each date input moves the other', async () => {
    await logIn();
    await expect.poll(() => text('unique-viewers')).toBe('3');
    const from = page.getByLabel('From', { exact: true });
    const to = page.getByLabel('To', { exact: true });
    expect(await from.getAttribute('max', { timeout: 3_000 })).toBe('2026-11-11');
    expect(await to.getAttribute('min')).toBe('2026-11-10');
    await from.fill('2026-11-20', { timeout: 3_000 });
    await expect.poll(() => to.inputValue(), { timeout: 3_000 }).toBe('2026-11-20');
    await expect.poll(() => page.url()).toContain('to=2026-11-20');
    await page.getByText('No events for these filters').waitFor({ timeout: 5_000 });
    await to.fill('2026-11-09', { timeout: 3_000 });
    expect(await from.inputValue()).toBe('2026-11-09');
    await expect.poll(() => page.url()).toContain('from=2026-11-09');
    await to.fill('2026-11-11', { timeout: 3_000 });
    expect(await from.inputValue()).toBe('2026-11-09');
    await expect.poll(() => page.url()).toContain('to=2026-11-11');
    await expect.poll(() => text('unique-viewers')).toBe('3');
  });

  it('restores live mode and every filter from the URL', async () => {
    await logIn('from=2026-11-10&to=2026-11-11&broadcastId=b2&live=1');
    await expect.poll(() => text('gross-USD')).toBe('$100.00');
    expect(await page.locator('input[name=live]').isChecked()).toBe(true);
    expect(await page.locator('.live-switch .live-dot').isVisible()).toBe(true);
    await page.locator('input[name=live]').uncheck();
    await expect.poll(() => page.url()).not.toContain('live=1');
    await page.locator('input[name=live]').check();
    await expect.poll(() => page.url()).toContain('live=1');
    await page.reload();
    await expect.poll(() => text('gross-USD')).toBe('$100.00');
    expect(await page.locator('input[name=live]').isChecked()).toBe(true);
    expect(await page.getByLabel('Broadcast', { exact: true }).inputValue()).toBe('b2');
  });

  it('lists polls newest first with their broadcast, every one reachable, and counts "1 vote"', async () => {
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    for (let n = 1; n <= 7; n++) {
      clock.advance(60_000);
      const created = await t.app.inject({ method: 'POST', url: '/v1/broadcasts/b2/overlays', headers: admin, payload: { type: 'poll', question: `Question ${n}?`, options: ['Yes', 'No'] } });
      const pollId = created.json().id as string;
      clock.advance(1_000);
      const vote = { event: 'poll.voted', timestamp: '2026-11-11T12:00:00Z', sessionId: `svc_q${n}`, broadcastId: 'b2', userId: null, data: { pollId, questionText: `Question ${n}?`, optionSelected: 'Yes', optionIndex: 0 } };
      expect((await t.app.inject({ method: 'POST', url: '/v1/events', headers: admin, payload: { events: [vote] } })).json().accepted).toBe(1);
    }
    await logIn();
    const questions = page.getByTestId('poll-question');
    await expect.poll(() => questions.count()).toBe(6);
    expect(await questions.first().textContent()).toBe('Question 7? · b2 · 1 vote');
    await page.getByRole('button', { name: 'Show all 8 polls' }).click();
    await expect.poll(() => questions.count()).toBe(8);
    expect(await questions.last().textContent()).toBe('Who wins? · b1 · 2 votes');
  });

  it("shows the tenant's time zone beside the range and the viewer numbers in a data table of its times", async () => {
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    expect((await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: admin, payload: { timeZone: 'America/New_York' } })).statusCode).toBe(200);
    await logIn('from=2026-11-10&to=2026-11-10');
    await expect.poll(() => text('time-zone')).toBe('Times in America/New_York');
    // New York's Nov 10 holds S3, which joined at 23:59:30 UTC.
    await expect.poll(() => text('unique-viewers')).toBe('3');
    await page.getByText('Viewers over time: data table').click();
    const rows = page.getByTestId('viewer-table').locator('tbody tr');
    expect(await rows.count()).toBe(96);
    expect(await rows.first().locator('th').textContent()).toBe('Nov 10, 2026, 12:00 AM');
    expect(await rows.nth(20).textContent()).toBe('Nov 10, 2026, 5:00 AM2');
  });

  it('compares each headline number with the period before', async () => {
    await logIn('from=2026-11-11&to=2026-11-11');
    await expect.poll(() => text('unique-viewers')).toBe('1');
    // Nov 10: 3 viewers, 66.67% engaged, EUR only.
    expect(await text('unique-viewers-change')).toBe('▼ 66.7% vs previous period');
    expect(await text('engagement-rate-change')).toBe('▲ 33.3 pts vs previous period');
    expect(await text('gross-USD-change')).toBe('new vs previous period');
    // Every revenue number too: average order and items per order.
    expect(await text('aov-USD-change')).toBe('new vs previous period');
    expect(await text('ipo-USD-change')).toBe('new vs previous period');
  });

  it('shows entries per contest and revenue over time with its data table', async () => {
    await logIn();
    await expect.poll(() => text('unique-viewers')).toBe('3');
    expect(await page.getByTestId('contest-table').locator('tbody tr').allTextContents()).toEqual(['c111']);
    await page.getByText('Revenue in USD: data table').click();
    const rows = page.getByTestId('revenue-table-USD').locator('tbody tr');
    expect(await rows.count()).toBe(192);
    expect(await rows.filter({ hasText: '$100.00' }).allTextContents()).toEqual(['Nov 11, 2026, 12:00 AM$100.001']);
  });

  it('drills down from a sponsor or a poll to the overview filtered on it, and opens definitions by keyboard', async () => {
    await logIn();
    await expect.poll(() => text('unique-viewers')).toBe('3');
    await page.getByRole('link', { name: 'Bolt Energy' }).click();
    await expect.poll(() => page.url()).toContain('sponsorId=bolt');
    await expect.poll(() => page.getByTestId('gross-EUR').count()).toBe(0);
    expect(await page.getByLabel('Sponsor', { exact: true }).inputValue()).toBe('bolt');
    await page.getByLabel('Sponsor', { exact: true }).selectOption('');
    await expect.poll(() => page.getByTestId('gross-EUR').count()).toBe(1);
    await page.getByTestId('poll-question').getByRole('link', { name: 'b1' }).click();
    await expect.poll(() => page.url()).toContain('broadcastId=b1');
    await expect.poll(() => page.getByTestId('gross-USD').count()).toBe(0);

    const info = page.getByRole('button', { name: 'How Engagement rate is computed' });
    await info.focus();
    await page.keyboard.press('Enter');
    expect(await info.getAttribute('aria-expanded')).toBe('true');
    expect(await page.getByText('Viewers with at least one of poll.voted').isVisible()).toBe(true);
  });

  it("filters on a country picked by name from the tenant's countries, and refuses a name it does not know", async () => {
    await logIn();
    await expect.poll(() => text('unique-viewers')).toBe('3');
    const country = page.getByLabel('Country', { exact: true });
    expect(await page.locator('#country-choices option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))).toEqual(['Germany', 'France']);
    await country.fill('Georgia');
    await country.press('Enter');
    await page.getByText('No country named "Georgia" in this data').waitFor();
    expect(page.url()).not.toContain('country=');
    expect(await text('unique-viewers')).toBe('3');
    await country.fill('germany');
    await country.press('Enter');
    await expect.poll(() => text('unique-viewers')).toBe('2');
    expect(page.url()).toContain('country=DE');
    await page.reload();
    await expect.poll(() => text('unique-viewers')).toBe('2');
    expect(await country.inputValue()).toBe('Germany');
  });

  it("formats numbers, money and shares for the user's locale", async () => {
    await page.context().close();
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: 'de-DE' })).newPage();
    await logIn();
    await expect.poll(() => text('unique-viewers')).toBe('3');
    expect(await text('gross-EUR')).toBe('25,00\u00a0€');
    expect(await text('engagement-rate')).toBe('66,7\u00a0%');
    expect(await text('ipo-EUR')).toBe('1,50');
  });
});
