import type { Browser, Page, Request } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { browserAvailable } from './browser';
import type { TestApp } from './test-app';
import { startFixtureApp, useDashboardBrowser } from './dashboard-test-bed';

/** The app shell: client-side routing, cached assets. */
describe.runIf(browserAvailable())('dashboard shell in a real browser', () => {
  let browser: Browser;
  let t: TestApp;
  let page: Page;
  let requests: Request[];

  useDashboardBrowser((b) => (browser = b));
  beforeEach(async () => {
    t = await startFixtureApp();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    requests = [];
    page.on('request', (request) => void requests.push(request));
  });
  afterEach(async () => {
    await page.context().close();
    await t.close();
  });

  async function logIn(path = '/?from=2026-11-10&to=2026-11-11'): Promise<void> {
    await page.goto(`${t.url}${path}`);
    await page.getByLabel('Admin token').fill(t.demo.adminToken);
    await page.getByRole('button', { name: 'Log in' }).click();
  }
  const notApi = () => requests.filter((r) => !new URL(r.url()).pathname.startsWith('/v1/')).map((r) => `${r.resourceType()} ${r.url()}`);

  it('changes tabs without loading a document or any asset, and Back and reload restore the view', async () => {
    await logIn();
    await page.getByTestId('unique-viewers').waitFor();
    requests = [];
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await page.getByText('events shown').waitFor();
    expect(new URL(page.url()).pathname).toBe('/events');
    expect(await page.getByRole('link', { name: 'Events', exact: true }).getAttribute('aria-current')).toBe('page');
    await page.getByRole('link', { name: 'Broadcasts', exact: true }).click();
    await page.getByRole('button', { name: 'Create broadcast' }).waitFor();
    await page.getByRole('link', { name: 'Rejected events', exact: true }).click();
    await page.locator('main .empty, main .panel').first().waitFor();
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByLabel('Webhook URL').waitFor();
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.getByLabel('Campaign', { exact: true }).waitFor();
    expect(notApi()).toEqual([]);
    expect(requests.length).toBeGreaterThan(0);

    await page.goBack();
    await page.getByLabel('Webhook URL').waitFor();
    expect(new URL(page.url()).pathname).toBe('/settings');
    await page.goBack();
    await page.goBack();
    await page.getByRole('button', { name: 'Create broadcast' }).waitFor();
    expect(notApi()).toEqual([]);

    await page.reload();
    await page.getByRole('button', { name: 'Create broadcast' }).waitFor();
    expect(await page.getByRole('link', { name: 'Broadcasts', exact: true }).getAttribute('aria-current')).toBe('page');
  });

  it('loads the script once per build: a second visit takes it from the browser cache', async () => {
    const served: string[] = [];
    const fromCache: boolean[] = [];
    const cached = new Set<string>();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    cdp.on('Network.requestServedFromCache', ({ requestId }) => void cached.add(requestId));
    cdp.on('Network.loadingFinished', ({ requestId }) => {
      if (scriptIds.has(requestId)) fromCache.push(cached.has(requestId));
    });
    const scriptIds = new Map<string, string>();
    cdp.on('Network.responseReceived', ({ requestId, type, response }) => {
      if (type !== 'Script') return;
      scriptIds.set(requestId, response.url);
      served.push(response.url);
    });
    await logIn();
    await page.getByTestId('unique-viewers').waitFor();
    const scripts = requests.filter((r) => r.resourceType() === 'script');
    expect(scripts).toHaveLength(1);
    const response = (await scripts[0]!.response())!;
    expect(response.headers()['content-encoding']).toBe('br');
    expect(response.headers()['cache-control']).toContain('immutable');
    requests = [];
    await page.goto(`${t.url}/events`);
    await page.getByText('events shown').waitFor();
    expect(served).toEqual([scripts[0]!.url(), scripts[0]!.url()]);
    expect(fromCache).toEqual([false, true]);
  });

  it('draws the viewer line with a named tooltip and the funnel as bars whose labels are not cut', async () => {
    await logIn();
    await page.getByTestId('unique-viewers').waitFor();
    const viewers = page.getByRole('region', { name: 'Viewer count' });
    const line = viewers.locator('.line-chart path.line');
    expect(await line.getAttribute('d')).toMatch(/^M[\d.]+,[\d.]+(L[\d.]+,[\d.]+)+$/);
    const plot = viewers.locator('.line-chart .plot-area');
    const box = (await plot.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await expect.poll(() => viewers.locator('.chart-tip').textContent()).toMatch(/Viewers: \d+$/);
    const funnel = page.getByRole('region', { name: 'Funnel' });
    expect(await funnel.locator('.bar-chart li').count()).toBe(4);
    const cut = await funnel.locator('.bar-label').evaluateAll((labels) => labels.filter((l) => l.scrollWidth > l.clientWidth).length);
    expect(cut).toBe(0);
  });

  it('shows a 404 page on an unknown path, with the nav once logged in', async () => {
    const response = await page.goto(`${t.url}/nope`);
    expect(response!.status()).toBe(404);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    expect(await page.getByLabel('Admin token').count()).toBe(0);
    await page.getByRole('link', { name: 'Go to the overview' }).click();
    await page.getByLabel('Admin token').fill(t.demo.adminToken);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByLabel('Campaign', { exact: true }).waitFor();
    await page.goto(`${t.url}/nope`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Pages' }).getByRole('link').count()).toBe(5);
  });

  it('shows a loading state while a page waits for its data, then the page', async () => {
    await logIn();
    await page.getByTestId('unique-viewers').waitFor();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/v1/analytics/events?**', async (route) => {
      await held;
      await route.continue();
    });
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    const loading = page.getByRole('status').filter({ hasText: 'Loading…' });
    await loading.waitFor();
    expect(await page.locator('main').getAttribute('aria-busy')).toBe('true');
    release();
    await page.getByText('events shown').waitFor();
    expect(await loading.count()).toBe(0);
    expect(await page.locator('main').getAttribute('aria-busy')).toBeNull();
  });
});
