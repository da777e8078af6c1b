import type { Browser, Page } from 'playwright-core';
import { blockingViolations, runAxe } from './overlay-geometry';

/** The viewports every dashboard page must fit: a phone, a laptop, a desktop. */
export const PAGE_VIEWPORTS = [
  { width: 360, height: 740 },
  { width: 1440, height: 900 },
  { width: 1920, height: 1080 },
] as const;

/**
 * A fresh page at `viewport`, in light or dark colour scheme. `forAxe`: the page's
 * Content-Security-Policy lets the test inject axe (the policy itself is tested elsewhere).
 */
export async function newDashboardPage(
  browser: Browser,
  viewport: { width: number; height: number },
  options: { colorScheme?: 'light' | 'dark'; forAxe?: boolean } = {},
): Promise<Page> {
  return (await browser.newContext({ viewport, colorScheme: options.colorScheme ?? 'light', bypassCSP: options.forAxe ?? false })).newPage();
}

/**
 * What does not fit in `main` at the current width, one line each: a panel or scroll box
 * wider than its box (a sideways scroll), text cut off by an ellipsis or a clip, and any
 * element reaching past the right edge of the window.
 */
export function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const name = (el: Element) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.className && typeof el.className === 'string' ? `.${el.className.trim().split(/\s+/).join('.')}` : ''} "${(el.textContent ?? '').trim().slice(0, 40)}"`;
    const width = document.documentElement.clientWidth;
    const insideScreenReaderOnly = (el: Element) => {
      for (let up = el.parentElement; up && up.tagName !== 'MAIN'; up = up.parentElement) {
        const r = up.getBoundingClientRect();
        if ((r.width <= 1 || r.height <= 1) && getComputedStyle(up).overflow !== 'visible') return true;
      }
      return false;
    };
    for (const el of Array.from(document.querySelectorAll('main *'))) {
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden' || el.closest('[hidden], dialog:not([open]), .visually-hidden, details:not([open]) > :not(summary)')) continue;
      const box = el.getBoundingClientRect();
      // Nothing to see (empty, or inside the 1-px clipped box of text kept for screen readers only).
      if (box.width <= 1 || box.height <= 1 || insideScreenReaderOnly(el)) continue;
      // An edit box scrolls its own text: that is how a long value is typed, not a layout fault.
      if (/^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName)) {
        if (box.right > width + 1) problems.push(`past the right edge (${Math.round(box.right)} > ${width}): ${name(el)}`);
        continue;
      }
      const clips = /(auto|scroll|hidden|clip)/.test(style.overflowX);
      if (clips && el.scrollWidth > el.clientWidth + 1) problems.push(`sideways overflow (${el.scrollWidth} > ${el.clientWidth}): ${name(el)}`);
      if (box.right > width + 1) problems.push(`past the right edge (${Math.round(box.right)} > ${width}): ${name(el)}`);
    }
    return problems;
  });
}

/** axe's serious and critical violations inside `main`. */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  return blockingViolations(await runAxe(page, 'main'));
}
