import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildSdk } from '@svc/sdk/build';
import { browserAvailable, launchBrowser, startPlayerPage, type PlayerPage } from './browser';
import { startTestApp, type TestApp } from './test-app';
import { ViewerPool } from './ws-client';

/** How far behind the live edge the fake player plays, and how close the overlay must keep to it. */
const LATENCY_MS = 8_000;
const TOLERANCE_MS = 250;

describe.runIf(browserAvailable())('the overlay in a browser: in step with the video, polls that close, views on the layout', () => {
  let browser: Browser;
  let t: TestApp;
  let host: PlayerPage;
  let hostOrigin: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    host = await startPlayerPage();
    hostOrigin = host.origin;
    await buildSdk();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    host?.close();
  });
  beforeEach(async () => {
    t = await startTestApp({ listen: true, config: { realtime: { throttleMs: 50 } } as never });
    await admin('PATCH', '/v1/settings', { fallbackCountry: 'DE' });
    await admin('POST', '/v1/broadcasts', { id: 'match-1', campaignId: 1 });
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
    await t.close();
  });

  async function admin(method: 'POST' | 'PATCH', url: string, payload?: object) {
    const response = await t.app.inject({ method, url, headers: { authorization: `Bearer ${t.demo.adminToken}` }, ...(payload ? { payload } : {}) });
    expect(response.statusCode, response.body).toBeLessThan(300);
    return response.json();
  }
  const createOverlay = async (body: object): Promise<string> => (await admin('POST', '/v1/broadcasts/match-1/overlays', body)).id;

  /**
   * A viewer's page; `player` is the source text of the player given to the overlay. The page
   * notes the time (this machine's clock, shared with the test) at which each card appears and goes.
   */
  async function viewer(player: string | null, size = { width: 1280, height: 720 }): Promise<Page> {
    const context = await browser.newContext({ viewport: size });
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (error) => console.error('page error:', error.message));
    await page.goto(`${hostOrigin}/player`);
    await page.setContent(`<!doctype html><html><body style="margin:0">
      <div id="player" style="position:relative;width:100vw;height:100vh;background:#111"></div>
      <script src="${t.url}/sdk/svc-core.js"></script>
      <script>
        window.seen = {};
        SvcSDK.configure({ apiKey: ${JSON.stringify(t.demo.apiKey)} });
        const overlay = SvcEngagementOverlay(${player ? `{ player: ${player} }` : ''});
        document.getElementById('player').appendChild(overlay);
        new MutationObserver(() => {
          const now = Date.now();
          const onScreen = new Set(Array.from(overlay.shadowRoot.querySelectorAll('section.card[data-overlay]')).map((card) => card.dataset.overlay));
          for (const id of onScreen) if (!window.seen[id]) window.seen[id] = { shown: now, hidden: null };
          for (const [id, times] of Object.entries(window.seen)) if (!onScreen.has(id) && times.hidden === null) times.hidden = now;
        }).observe(overlay.shadowRoot, { childList: true, subtree: true });
        window.joined = SvcSDK.setContent('match-1');
      </script></body></html>`);
    await page.evaluate(() => (window as unknown as { joined: Promise<void> }).joined);
    return page;
  }
  const seen = (page: Page, id: string) =>
    page.evaluate((overlayId) => (window as unknown as { seen: Record<string, { shown: number; hidden: number | null }> }).seen[overlayId] ?? null, id);

  it('shows an overlay when a player 8 s behind the live edge reaches it, and hides it in step; without a player at once', async () => {
    const behind = await viewer(`{ currentTime: 0, latency: ${LATENCY_MS / 1_000} }`);
    const live = await viewer(null);
    const contestId = await createOverlay({ type: 'contest', title: 'Win a ball' });

    const shownAt = Date.now();
    await admin('POST', `/v1/broadcasts/match-1/overlays/${contestId}/show`);
    await expect.poll(() => seen(live, contestId), { timeout: 2_000 }).not.toBeNull();
    expect((await seen(live, contestId))!.shown - shownAt).toBeLessThan(1_000);
    // Not before its moment: the player has not reached it yet.
    await behind.waitForTimeout(LATENCY_MS - 1_500);
    expect(await seen(behind, contestId)).toBeNull();
    await expect.poll(() => seen(behind, contestId), { timeout: 3_000, interval: 50 }).not.toBeNull();
    expect(Math.abs((await seen(behind, contestId))!.shown - shownAt - LATENCY_MS)).toBeLessThanOrEqual(TOLERANCE_MS);

    const hiddenAt = Date.now();
    await admin('POST', `/v1/broadcasts/match-1/overlays/${contestId}/hide`);
    await expect.poll(async () => (await seen(live, contestId))?.hidden ?? null, { timeout: 2_000 }).not.toBeNull();
    // Still on the delayed screen: the video has not reached the hide.
    await behind.waitForTimeout(LATENCY_MS - 1_500);
    expect((await seen(behind, contestId))!.hidden).toBeNull();
    await expect.poll(async () => (await seen(behind, contestId))?.hidden ?? null, { timeout: 3_000, interval: 50 }).not.toBeNull();
    expect(Math.abs((await seen(behind, contestId))!.hidden! - hiddenAt - LATENCY_MS)).toBeLessThanOrEqual(TOLERANCE_MS);
  });

  it('closes a poll with closesAt on every viewer\'s screen at the same moment, and the server refuses a vote sent after it', async () => {
    // The viewers are on the page first (opening a browser page is the slow part on a loaded machine).
    const pages = [await viewer(null), await viewer(null)];
    const closesAt = Date.now() + 4_000;
    const pollId = await createOverlay({ type: 'poll', question: 'Who wins?', options: ['Reds', 'Blues'], closesAt: new Date(closesAt).toISOString() });
    await admin('POST', `/v1/broadcasts/match-1/overlays/${pollId}/show`);
    const card = (page: Page) => page.locator('svc-engagement-overlay').locator(`[data-overlay="${pollId}"]`);
    for (const page of pages) {
      await card(page).getByText(/Closes in 0:0[1-4]/).waitFor({ timeout: 3_000 });
      expect(await card(page).getByRole('button', { name: 'Reds' }).count()).toBe(1);
    }
    // One viewer votes in time.
    await card(pages[0]!).getByRole('button', { name: 'Blues' }).click();
    await card(pages[0]!).getByText('Thanks for voting').waitFor();

    // At closesAt both screens close: no option to press, "Voting has closed", the results.
    for (const page of pages) {
      await card(page).getByText('Voting has closed').first().waitFor({ timeout: Math.max(closesAt - Date.now(), 0) + 1_500 });
      expect(Date.now()).toBeGreaterThanOrEqual(closesAt - 1_000);
      expect(await card(page).getByRole('button').count()).toBe(0);
      await expect.poll(() => card(page).locator('.share').allTextContents()).toEqual(['0%', '100%']);
    }
    // A vote sent after the close (as a page with a stale screen would send it) is refused.
    const refused = await pages[1]!.evaluate((id) =>
      (window as unknown as { SvcSDK: { client: { vote(id: string, option: number): Promise<void> } } }).SvcSDK.client.vote(id, 0).then(
        () => 'accepted',
        (error: { code: string }) => error.code,
      ), pollId);
    expect(refused).toBe('poll_closed');
    const votes = await t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq, events: ['poll.voted'] }, { limit: 100 });
    expect(votes.map((v) => v.data.optionSelected)).toEqual(['Blues']);
  });

  it('counts a view only for what the layout draws: not a queued card, not a product scrolled out of the carousel', async () => {
    const viewed = async (event: string) =>
      (await t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq, events: [event] }, { limit: 100 })).map((e) => String(e.data.productId ?? e.data.pollId ?? e.data.contestId));
    const pollId = await createOverlay({ type: 'poll', question: 'Who wins?', options: ['Reds', 'Blues'] });
    const contestId = await createOverlay({ type: 'contest', title: 'Win a ball' });
    const products = [];
    for (const name of ['Jersey', 'Scarf', 'Ball']) products.push(await createOverlay({ type: 'product', name, price: 10, currency: 'EUR', placement: 'carousel', productId: name.toLowerCase() }));
    for (const id of [pollId, contestId, ...products]) await admin('POST', `/v1/broadcasts/match-1/overlays/${id}/show`);

    // A phone: one sheet (the poll first; the contest waits) above the carousel.
    const phone = await viewer(null, { width: 320, height: 568 });
    await expect.poll(() => viewed('poll.viewed'), { timeout: 5_000 }).toEqual([pollId]);
    // Only the carousel card that is at least half in view counts.
    await expect.poll(() => viewed('product.viewed'), { timeout: 5_000 }).toEqual(['jersey']);
    await phone.waitForTimeout(1_500);
    expect(await viewed('contest.viewed')).toEqual([]);
    expect(await viewed('product.viewed')).toEqual(['jersey']);

    // The poll goes: the contest comes out of the queue.
    await admin('POST', `/v1/broadcasts/match-1/overlays/${pollId}/hide`);
    await expect.poll(() => viewed('contest.viewed'), { timeout: 5_000 }).toEqual([contestId]);
    // Swiped along, card by card: each is seen in turn (one passed over quickly would not count).
    const swipeTo = (index: number) =>
      phone.locator('svc-engagement-overlay').evaluate((el, i) => {
        const shelf = el.shadowRoot!.querySelector<HTMLElement>('.shelf')!;
        shelf.scrollTo({ left: (shelf.children[i] as HTMLElement).offsetLeft - shelf.offsetLeft });
      }, index);
    await swipeTo(1);
    await expect.poll(async () => (await viewed('product.viewed')).sort(), { timeout: 5_000 }).toEqual(['jersey', 'scarf']);
    await swipeTo(2);
    await expect.poll(async () => (await viewed('product.viewed')).sort(), { timeout: 5_000 }).toEqual(['ball', 'jersey', 'scarf']);
  });

  it('writes live results into the poll card in place: a tap in progress is not lost to a redraw', async () => {
    const pollId = await createOverlay({ type: 'poll', question: 'Who wins?', options: ['Reds', 'Blues'] });
    await admin('POST', `/v1/broadcasts/match-1/overlays/${pollId}/show`);
    const page = await viewer(null);
    const card = page.locator('svc-engagement-overlay').locator(`[data-overlay="${pollId}"]`);
    await card.getByText('0 votes').waitFor();
    await card.evaluate((node) => ((node as HTMLElement & { marked?: boolean }).marked = true));
    // Others vote: the total moves, on the same card.
    const others = new ViewerPool('other');
    try {
      for (let i = 0; i < 3; i++) {
        const other = await others.welcomed(t.url, t.demo.apiKey, 'match-1');
        other.send({ type: 'poll.vote', pollId, optionIndex: i % 2, requestId: `v${i}` });
        await other.next((m) => m.type === 'ack');
      }
      await card.getByText('3 votes').waitFor();
      expect(await card.evaluate((node) => (node as HTMLElement & { marked?: boolean }).marked === true)).toBe(true);
      // The viewer's own vote draws the results: a new card, with the live numbers in it.
      await card.getByRole('button', { name: 'Blues' }).click();
      await card.getByText('4 votes').waitFor();
      expect(await card.locator('.share').allTextContents()).toEqual(['50%', '50%']);
    } finally {
      others.terminateAll();
    }
  });

  it('keeps working when the page moves the overlay to another container (as a fullscreen player does)', async () => {
    const contestId = await createOverlay({ type: 'contest', title: 'Win a ball' });
    await admin('POST', `/v1/broadcasts/match-1/overlays/${contestId}/show`);
    const page = await viewer(null);
    await page.locator('svc-engagement-overlay').getByRole('button', { name: 'Enter' }).waitFor();
    // Moved before the card counted as viewed: the card it keeps is watched again in its new place.
    await page.evaluate(() => {
      const overlay = document.querySelector('svc-engagement-overlay')!;
      const fullscreen = document.createElement('div');
      fullscreen.id = 'fullscreen';
      fullscreen.setAttribute('style', 'position:fixed;inset:0');
      document.body.append(fullscreen);
      fullscreen.append(overlay);
    });
    const viewed = () => t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq, events: ['contest.viewed'] }, { limit: 10 });
    await expect.poll(async () => (await viewed()).length, { timeout: 5_000 }).toBe(1);
    // And back: still drawn, still usable.
    await page.evaluate(() => document.getElementById('player')!.append(document.querySelector('svc-engagement-overlay')!));
    await page.locator('svc-engagement-overlay').getByRole('button', { name: 'Enter' }).click();
    await page.locator('svc-engagement-overlay').locator('.done', { hasText: "You're in!" }).waitFor();
  });
});
