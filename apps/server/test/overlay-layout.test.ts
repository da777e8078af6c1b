import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSdk } from '@svc/sdk/build';
import { browserAvailable, launchBrowser } from './browser';
import { blockingViolations, findCoveredMiddle, findOutsidePlayer, findSmallTouchTargets, findTextOverlaps, measureSettledOverlay, runAxe, undeterminedContrast } from './overlay-geometry';
import { startTestApp, type TestApp } from './test-app';

/**
 * The overlay as viewers see it, on every player size from a small phone to a large screen: each
 * overlay type in each of its states, and the busiest moment (a poll, the product carousel, a
 * sponsor moment, a cart holding items and the thank-you after an order), judged by the rules of
 * overlay-geometry.ts. The player fills the page, so the viewport is the player's size.
 */
const PLAYER_SIZES = [
  { width: 320, height: 568, touch: true },
  { width: 390, height: 844, touch: true },
  { width: 844, height: 390, touch: true },
  { width: 768, height: 1024, touch: true },
  { width: 1280, height: 720, touch: false },
  { width: 1920, height: 1080, touch: false },
  // The viewer's dark colour scheme: dark cards, and colours that must still reach AA.
  { width: 390, height: 844, touch: true, colorScheme: 'dark' as const },
];
const SCREENSHOTS = join(process.cwd(), 'docs', 'screenshots');
/** How long one interaction may wait for its control: a control that cannot be reached fails fast. */
const ACTION_TIMEOUT_MS = 5_000;
const SIZE_TIMEOUT_MS = 90_000;

const POLL = { type: 'poll', question: 'Who takes the derby?', options: ['Home', 'Away', 'Too close to call tonight'], closesAt: new Date(Date.now() + 2 * 3_600_000).toISOString() };
const CONTEST = { type: 'contest', title: 'Win a signed match ball', description: 'Enter before the final whistle: the winner is drawn live at full time.' };
const SPONSOR_MESSAGE = 'Tonight’s replays are brought to you by Acme Sports';
const minutesFromNow = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();
const lineup = () => ({
  type: 'lineup',
  items: [
    { title: 'Kick-off', at: minutesFromNow(-50) },
    { title: 'Half-time show', at: minutesFromNow(-5) },
    { title: 'Second half', at: minutesFromNow(10) },
    { title: 'Trophy ceremony', at: minutesFromNow(60) },
  ],
});
const products = (origin: string) =>
  [
    { name: 'Home jersey 2026', price: 79.9, productId: 'jersey', color: '#c8102e' },
    { name: 'Club scarf', price: 20, productId: 'scarf', color: '#1d428a' },
    { name: 'Official match ball, size 5', price: 34.5, productId: 'ball', color: '#f2a900' },
  ].map(({ color, ...product }) => ({ type: 'product', ...product, currency: 'EUR', placement: 'carousel', sponsorId: 'acme', imageUrl: `${origin}/img/${color.slice(1)}.svg` }));

/** A small product picture, served by the customer's page. */
const productImage = (color: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="120" viewBox="0 0 160 120"><rect width="160" height="120" fill="#f4f4f6"/><rect x="45" y="20" width="70" height="80" rx="12" fill="#${color}"/></svg>`;

const overlayOf = (page: Page) => page.locator('svc-engagement-overlay');
const addToCart = (overlay: Locator) => overlay.getByRole('button', { name: /add.*to cart/i }).first();
/** The cart's own button, not a product's "Add to cart". */
const cartButton = (overlay: Locator) => overlay.getByRole('button', { name: /^(?!.*\badd\b).*\bcart\b/i });

async function placeOrder(overlay: Locator): Promise<void> {
  await cartButton(overlay).click();
  await overlay.getByRole('button', { name: /checkout/i }).click();
  await overlay.getByRole('button', { name: /place order/i }).click();
  await overlay.getByText(/thank you/i).first().waitFor();
}

/** One state to judge: how to reach it from the previous one, on the same page. */
interface Step {
  state: string;
  reach: (overlay: Locator) => Promise<void>;
  /** Text the viewer must see in this state (a text node containing it, drawn at least in part). */
  drawn: Array<string | RegExp>;
  /** Saved as docs/screenshots/overlay-<w>x<h>.png. */
  screenshot?: boolean;
}

/** The scenarios, each on a fresh page of its own broadcast, its states in order. */
const SCENARIOS: Array<{ broadcast: string; steps: Step[] }> = [
  {
    broadcast: 'layout-poll',
    steps: [
      { state: 'poll before voting', reach: (o) => o.getByRole('button', { name: 'Too close to call tonight' }).waitFor(), drawn: [POLL.question, 'Too close to call tonight', /Closes in \d/] },
      {
        state: 'poll after voting (results)',
        reach: async (o) => {
          await o.getByRole('button', { name: 'Home', exact: true }).click();
          await o.getByText(/\d\s?%/).first().waitFor();
        },
        drawn: [POLL.question, 'Too close to call tonight', /\d\s?%/],
      },
    ],
  },
  {
    broadcast: 'layout-contest',
    steps: [
      { state: 'contest before entering', reach: (o) => o.getByRole('button', { name: 'Enter', exact: true }).waitFor(), drawn: [CONTEST.title, 'Enter'] },
      {
        state: 'contest after entering',
        reach: async (o) => {
          await o.getByRole('button', { name: 'Enter', exact: true }).click();
          await o.getByRole('button', { name: 'Enter', exact: true }).waitFor({ state: 'detached' });
        },
        drawn: [CONTEST.title],
      },
    ],
  },
  { broadcast: 'layout-lineup', steps: [{ state: 'lineup (4 items)', reach: (o) => o.getByText(/Half-time show/).first().waitFor(), drawn: ['Half-time show', 'Second half', 'Now'] }] },
  {
    // Both were pinned to the same corner once: the lineup under the cart button.
    broadcast: 'layout-lineup-cart',
    steps: [
      {
        state: 'lineup beside a product and the cart button',
        reach: async (o) => {
          await o.getByText(/Half-time show/).first().waitFor();
          await cartButton(o).waitFor();
        },
        drawn: ['Half-time show', 'Home jersey 2026', /cart/i],
      },
    ],
  },
  { broadcast: 'layout-sponsor', steps: [{ state: 'sponsor moment', reach: (o) => o.getByText(SPONSOR_MESSAGE).waitFor(), drawn: [SPONSOR_MESSAGE, 'Acme Sports'] }] },
  {
    broadcast: 'layout-products',
    steps: [
      { state: 'product carousel (3 products)', reach: (o) => addToCart(o).waitFor(), drawn: ['Home jersey 2026', '€79.90', /add.*to cart/i] },
      {
        state: 'cart panel open',
        reach: async (o) => {
          await addToCart(o).click();
          await cartButton(o).click();
          await o.getByRole('button', { name: /checkout/i }).waitFor();
        },
        drawn: ['Home jersey 2026', /checkout/i],
      },
      {
        state: 'thank-you after an order',
        reach: async (o) => {
          await o.getByRole('button', { name: /checkout/i }).click();
          await o.getByRole('button', { name: /place order/i }).click();
          await o.getByText(/thank you/i).first().waitFor();
        },
        drawn: [/thank you/i],
      },
    ],
  },
  // Created to close two seconds after the start: closed by the time any size gets here.
  { broadcast: 'layout-poll-closed', steps: [{ state: 'poll closed', reach: (o) => o.getByText('Voting has closed').first().waitFor(), drawn: [POLL.question, 'Voting has closed', /\d\s?%/] }] },
  { broadcast: 'layout-contest-closed', steps: [{ state: 'contest closed', reach: (o) => o.getByText('Entries have closed').first().waitFor(), drawn: [CONTEST.title, 'Entries have closed'] }] },
  {
    broadcast: 'layout-busy',
    steps: [
      {
        state: 'busiest: poll, carousel, sponsor moment, cart holding an item',
        reach: async (o) => {
          await o.getByRole('button', { name: 'Too close to call tonight' }).waitFor();
          await o.getByText(SPONSOR_MESSAGE).waitFor();
          await addToCart(o).click();
          await cartButton(o).filter({ hasText: '1' }).waitFor();
        },
        drawn: [POLL.question, 'Too close to call tonight', SPONSOR_MESSAGE, 'Home jersey 2026', /cart.*1/i],
      },
      {
        state: 'busiest, with the thank-you right after an order and an item in the cart again',
        reach: async (o) => {
          await placeOrder(o);
          await addToCart(o).click();
          await o.getByText(/thank you/i).first().waitFor();
        },
        drawn: [POLL.question, SPONSOR_MESSAGE, 'Home jersey 2026', /cart.*1/i, /thank you/i],
        screenshot: true,
      },
    ],
  },
];

describe.runIf(browserAvailable())('the overlay on every player size: nothing overlaps, nothing leaves the player, touch targets, axe', () => {
  let browser: Browser;
  let t: TestApp;
  let hostServer: Server;
  let hostOrigin: string;

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  async function call(method: 'POST' | 'PATCH', url: string, payload?: object): Promise<{ id?: string }> {
    const response = await t.app.inject({ method, url, headers: admin(), ...(payload ? { payload } : {}) });
    expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    return response.body ? response.json() : {};
  }
  async function showOverlays(broadcastId: string, bodies: object[]): Promise<void> {
    await call('POST', '/v1/broadcasts', { id: broadcastId, campaignId: 1 });
    for (const body of bodies) {
      const { id } = await call('POST', `/v1/broadcasts/${broadcastId}/overlays`, body);
      await call('POST', `/v1/broadcasts/${broadcastId}/overlays/${id}/show`);
    }
  }

  /** The customer's page, on another origin: a player filling the window, the overlay in it. */
  function playerPage(broadcastId: string): string {
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Player</title></head>
      <body style="margin:0;overflow:hidden;background:#000">
      <div id="player" style="position:relative;width:100vw;height:100vh;background:linear-gradient(160deg,#1c3b5a,#0b0d12 55%,#3a1631)"></div>
      <script src="${t.url}/sdk/svc-core.js"></script>
      <script>
        SvcSDK.configure({ apiKey: ${JSON.stringify(t.demo.apiKey)} });
        document.getElementById('player').appendChild(SvcEngagementOverlay());
        SvcSDK.setContent(${JSON.stringify(broadcastId)});
      </script></body></html>`;
  }

  beforeAll(async () => {
    hostServer = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://host');
      const image = /^\/img\/([0-9a-f]{6})\.svg$/.exec(url.pathname);
      if (image) return response.setHeader('content-type', 'image/svg+xml').end(productImage(image[1]!));
      if (url.pathname.startsWith('/player/')) return response.setHeader('content-type', 'text/html').end(playerPage(decodeURIComponent(url.pathname.slice(8))));
      response.setHeader('content-type', 'text/html').end('<!doctype html><title>Acme Sports</title>');
    });
    await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
    hostOrigin = `http://127.0.0.1:${(hostServer.address() as AddressInfo).port}`;
    await buildSdk();
    browser = await launchBrowser();
    mkdirSync(SCREENSHOTS, { recursive: true });

    t = await startTestApp({ listen: true, config: { realtime: { throttleMs: 50 } } });
    // Viewers are placed in Germany, one of the default markets, so the products show.
    await call('PATCH', '/v1/settings', { fallbackCountry: 'DE' });
    await call('POST', '/v1/sponsors', { id: 'acme', name: 'Acme Sports', logoUrl: `${hostOrigin}/img/e4572e.svg` });
    const sponsorMoment = { type: 'sponsor_moment', sponsorId: 'acme', message: SPONSOR_MESSAGE, ctaUrl: `${hostOrigin}/acme` };
    await showOverlays('layout-poll', [POLL]);
    await showOverlays('layout-contest', [CONTEST]);
    await showOverlays('layout-lineup', [lineup()]);
    await showOverlays('layout-lineup-cart', [lineup(), products(hostOrigin)[0]!]);
    await showOverlays('layout-sponsor', [sponsorMoment]);
    await showOverlays('layout-products', products(hostOrigin));
    await showOverlays('layout-busy', [POLL, ...products(hostOrigin), sponsorMoment]);
    const closing = new Date(Date.now() + 2_000).toISOString();
    await showOverlays('layout-poll-closed', [{ ...POLL, closesAt: closing }]);
    await showOverlays('layout-contest-closed', [{ ...CONTEST, closesAt: closing }]);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    hostServer?.close();
  });

  for (const size of PLAYER_SIZES) {
    const name = `${size.width}x${size.height}${size.colorScheme ? `-${size.colorScheme}` : ''}`;
    it(`shows every overlay state at ${name} apart, inside the player${size.touch ? ', with 44 px touch targets' : ''}, without serious axe violations`, async () => {
      const context = await browser.newContext({ viewport: { width: size.width, height: size.height }, hasTouch: size.touch, reducedMotion: 'reduce', colorScheme: size.colorScheme ?? 'light' });
      context.setDefaultTimeout(ACTION_TIMEOUT_MS);
      const problems: string[] = [];
      const notes: string[] = [];
      try {
        for (const scenario of SCENARIOS) {
          const page = await context.newPage();
          page.on('pageerror', (error) => problems.push(`${name} ${scenario.broadcast}: page error ${error.message}`));
          await page.goto(`${hostOrigin}/player/${scenario.broadcast}`);
          for (const step of scenario.steps) {
            const where = `${name} ${step.state}`;
            try {
              await step.reach(overlayOf(page));
            } catch (error) {
              // A state that cannot be reached (a control off-screen or covered) is a failure too; the scenario stops there.
              problems.push(`${where}: could not reach this state: ${briefly(error as Error)}`);
              break;
            }
            const verdict = await judge(page, size.touch, step.drawn);
            problems.push(...verdict.problems.map((problem) => `${where}: ${problem}`));
            notes.push(...verdict.notes.map((note) => `${where}: ${note}`));
            if (step.screenshot) await page.screenshot({ path: join(SCREENSHOTS, `overlay-${name}.png`) });
          }
          await page.close();
        }
      } finally {
        await context.close();
      }
      if (notes.length) console.warn(`Not judged (check by eye in the screenshots):\n${notes.join('\n')}`);
      expect(problems).toEqual([]);
    }, SIZE_TIMEOUT_MS);
  }
});

/**
 * Every rule on the overlay as it is drawn once it has settled: the problems, and as notes the
 * text whose contrast axe could not decide (no rule fails on those).
 */
async function judge(page: Page, touch: boolean, drawn: Array<string | RegExp>): Promise<{ problems: string[]; notes: string[] }> {
  // A click may have scrolled the page to reach a control; the player is measured where the viewer sees it.
  await page.evaluate(() => window.scrollTo(0, 0));
  const layout = await measureSettledOverlay(page);
  const axe = await runAxe(page);
  const problems = [
    ...drawn
      .filter((expected) => !layout.texts.some((text) => (typeof expected === 'string' ? text.text.includes(expected) : expected.test(text.text))))
      .map((expected) => `${String(expected)} is not drawn (hidden, clipped away or missing)`),
    ...findTextOverlaps(layout),
    ...findOutsidePlayer(layout),
    ...findCoveredMiddle(layout),
    ...(touch ? findSmallTouchTargets(layout) : []),
    ...blockingViolations(axe),
  ];
  return { problems, notes: undeterminedContrast(axe).map((target) => `axe could not measure the contrast of ${target}`) };
}

/** A Playwright error in one line: what failed, and why as its call log tells (e.g. what covered the control). */
function briefly(error: Error): string {
  // Playwright's call log comes with terminal colours.
  const lines = error.message.replace(/\x1b\[[0-9;]*m/g, '').split('\n').map((line) => line.trim()).filter(Boolean);
  const log = lines.filter((line) => line.startsWith('- ')).map((line) => line.slice(2));
  const why = log.filter((line) => /intercepts pointer events|outside of the viewport|not visible|not stable|not enabled|detached/.test(line)).at(-1) ?? log.at(-1);
  return why ? `${lines[0]} (${why})` : lines[0]!;
}
