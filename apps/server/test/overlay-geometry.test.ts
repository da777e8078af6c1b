import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchBrowser } from './browser';
import { blockingViolations, findCoveredMiddle, findOutsidePlayer, findSmallTouchTargets, findTextOverlaps, measureSettledOverlay, runAxe, type OverlayLayout } from './overlay-geometry';

/**
 * A page made to break each rule exactly once, in an overlay built like the SDK's (an element with
 * an open shadow root, one part in a nested shadow root) over a 400×300 player:
 * "Alpha overlaps" lies on "Beta overlaps"; the button "Outside" sits right of the player; the
 * button "Tiny" is 30×30; "Faint text" is light grey on white; the card "Beside" covers the middle. Things that must not count: a
 * carousel (overflow:auto) whose second and third cards are scrolled out of sight, though the
 * second would lie on "Beside" and the third would leave the player, with a 30×30 button in them;
 * text hidden by visibility, opacity, display or clip-path; a screen-reader-only text; two lines set with
 * line-height 1, whose font boxes overlap though their glyphs do not (one inside display:contents).
 */
const PLANTED_PAGE = `<!doctype html><html lang="en"><head><title>Planted layout</title></head>
<body style="margin:0;background:#000;font:16px/1.4 sans-serif">
<div id="player" style="position:relative;width:400px;height:300px;background:#111"></div>
<script>
  customElements.define('inner-part', class extends HTMLElement {
    constructor() { super(); this.attachShadow({ mode: 'open' }).innerHTML = '<span>Beta overlaps</span>'; }
  });
  const host = document.createElement('test-overlay');
  host.setAttribute('style', 'position:absolute;inset:0;display:block');
  host.attachShadow({ mode: 'open' }).innerHTML = \`
    <style>
      .card { position: absolute; background: #fff; color: #111; padding: 4px; margin: 0; }
      button { padding: 0; border: 0; background: #1a4fa0; color: #fff; font-size: 12px; }
    </style>
    <div class="card" style="left:10px;top:10px;width:180px;height:40px">
      <span style="position:absolute;left:4px;top:4px">Alpha overlaps</span>
      <inner-part style="position:absolute;left:20px;top:8px"></inner-part>
    </div>
    <button aria-label="Outside" style="position:absolute;left:410px;top:10px;width:48px;height:48px"></button>
    <button style="position:absolute;left:300px;top:10px;width:30px;height:30px">Tiny</button>
    <p class="card" style="left:10px;top:70px;color:#c8c8c8">Faint text</p>
    <div class="card" style="left:10px;top:130px;width:150px;height:60px;padding:0;overflow-x:auto;overflow-y:hidden;white-space:nowrap">
      <div style="display:inline-block;width:150px">Card one</div><div style="display:inline-block;width:150px">Card two hidden <button style="width:30px;height:30px">Go</button></div><div style="display:inline-block;width:150px">Card three hidden</div>
    </div>
    <span class="card" style="left:170px;top:135px">Beside</span>
    <span class="card" style="left:170px;top:135px;visibility:hidden">Invisible</span>
    <div style="position:absolute;left:170px;top:135px;opacity:0"><span>Transparent</span></div>
    <span style="position:absolute;left:170px;top:135px;display:none">Not displayed</span>
    <span style="position:absolute;left:170px;top:135px;clip-path:inset(50%)">Clipped by a path</span>
    <div style="position:absolute;left:175px;top:140px;clip:rect(0 0 0 0);white-space:nowrap">Announced politely</div>
    <div class="card" style="left:230px;top:220px;width:160px;font-family:system-ui;line-height:1">
      <div>Tight one</div><div style="display:contents"><span>Tight two</span></div>
    </div>
    <div class="card" style="left:10px;top:220px;width:200px;height:60px">
      <div style="overflow:hidden;height:10px"><span style="position:absolute;left:4px;top:20px">Escapes the box</span></div>
    </div>\`;
  document.getElementById('player').appendChild(host);
</script></body></html>`;

const TARGET = { host: 'test-overlay', player: '#player' };

describe.runIf(browserAvailable())('overlay geometry checks on a page with planted problems', () => {
  let browser: Browser;
  let page: Page;
  let layout: OverlayLayout;

  beforeAll(async () => {
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    await page.setContent(PLANTED_PAGE);
    layout = await measureSettledOverlay(page, { target: TARGET, quietMs: 200 });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('measures the text that is drawn, across nested shadow roots, and leaves out what is scrolled away or hidden', () => {
    const texts = layout.texts.map((text) => text.text);
    expect(texts.sort()).toEqual(['Alpha overlaps', 'Beside', 'Beta overlaps', 'Card one', 'Escapes the box', 'Faint text', 'Tight one', 'Tight two', 'Tiny']);
    // A positioned box escapes the overflow of an ancestor below its containing block: drawn whole.
    const escaped = layout.texts.find((text) => text.text === 'Escapes the box')!.rects[0]!;
    expect(escaped.bottom - escaped.top).toBeGreaterThan(10);
    // The carousel shows its first card only, cut at the carousel's edge.
    expect(Math.max(...layout.texts.find((text) => text.text === 'Card one')!.rects.map((rect) => rect.right))).toBeLessThanOrEqual(160);
    expect(layout.controls.map((control) => control.name).sort()).toEqual(['button "Outside"', 'button "Tiny"']);
  });

  it('finds the two texts drawn over each other, and nothing else', () => {
    const overlaps = findTextOverlaps(layout);
    expect(overlaps).toHaveLength(1);
    expect(overlaps[0]).toMatch(/"Alpha overlaps" overlaps text "Beta overlaps"/);
  });

  it('finds the control outside the player, and nothing else', () => {
    expect(findOutsidePlayer(layout)).toEqual([expect.stringMatching(/^button "Outside" 48×48 at \(410, 10\) is outside the player 400×300/)]);
  });

  it('finds the card over the middle of the player, and nothing else', () => {
    expect(findCoveredMiddle(layout)).toEqual([
      expect.stringMatching(/^a painted box \d+×\d+ at \(170, 135\) covers the middle of the video 24×24 at \(188, 138\)$/),
      expect.stringMatching(/^text "Beside" covers the middle/),
    ]);
  });

  it('finds the 30×30 button, and nothing else', () => {
    expect(findSmallTouchTargets(layout)).toEqual(['button "Tiny" is 30×30 at (300, 10), under 44×44 px']);
  });

  it('finds the low-contrast text with axe, and no other serious or critical violation', async () => {
    const problems = blockingViolations(await runAxe(page, TARGET.player));
    expect(problems).toEqual([expect.stringMatching(/^axe color-contrast \(serious\): .* — test-overlay >>> p$/)]);
  });
});
