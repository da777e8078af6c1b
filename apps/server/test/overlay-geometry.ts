import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/**
 * What a viewer sees of an overlay, measured in a real browser, and the layout rules it must keep:
 * (a) no two pieces of text drawn over each other, (b) all text and every control inside the
 * player, (c) touch targets of at least 44×44 CSS px, (d) no serious or critical axe violation.
 *
 * The measuring functions run inside the page: they are sent as source text (`fn.toString()`), so
 * each uses only the DOM and the other in-page functions listed in `IN_PAGE_FUNCTIONS`. The
 * checks run in Node on the measured numbers.
 */

/** A rectangle in CSS px of the viewport. */
export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** One text node as drawn: its line boxes, each cut to what its clipping ancestors let through. */
export interface TextBox {
  text: string;
  rects: Box[];
}

/** One control: its whole border box (the hit area) and the part of it that is drawn. */
export interface ControlBox {
  name: string;
  box: Box;
  visible: Box;
}

export interface OverlayLayout {
  player: Box;
  texts: TextBox[];
  controls: ControlBox[];
  /** The drawn part of every box that paints a background (cards, buttons, notices). */
  surfaces: Box[];
}

/** Two text boxes may touch by this much (anti-aliasing, rounding) without counting as overlapping. */
export const TEXT_OVERLAP_TOLERANCE_PX = 1;
/** How far a text box or control may reach past the player's edge (subpixel rounding). */
export const PLAYER_EDGE_TOLERANCE_PX = 1;
/** WCAG 2.5.5 (AAA) and both platforms' guidelines: the smallest comfortable touch target. */
export const MIN_TOUCH_TARGET_PX = 44;
/** What counts as a control. `tabindex="-1"` marks a programmatic focus target, not something to tap. */
export const CONTROL_SELECTOR = 'button, a[href], input:not([type=hidden]), select, textarea, [role=button], [tabindex]:not([tabindex="-1"])';

// ---------------------------------------------------------------------------------------------
// In the page

const UNBOUNDED: Box = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };

/** The common part of two boxes, or null when they do not share an area. */
function intersectBoxes(a: Box, b: Box): Box | null {
  const box = { left: Math.max(a.left, b.left), top: Math.max(a.top, b.top), right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom) };
  return box.right > box.left && box.bottom > box.top ? box : null;
}

function boxOf(rect: DOMRectReadOnly): Box {
  return { left: rect.left, top: rect.top, right: rect.right, bottom: rect.bottom };
}

/** The parent in the flat tree: across a shadow root to its host. */
function composedParent(node: Node): Element | null {
  if (node.parentElement) return node.parentElement;
  const parent = node.parentNode;
  return parent instanceof ShadowRoot ? parent.host : null;
}

/**
 * Whether an element's content is drawn at all: not under display:none, not visibility:hidden,
 * not under opacity 0 (up to the host). `display: contents` has no box of its own but draws its
 * content, so it counts as drawn.
 */
function isRendered(element: Element, host: Element): boolean {
  if (getComputedStyle(element).visibility !== 'visible') return false;
  for (let node: Element | null = element; node; node = node === host ? null : composedParent(node)) {
    const style = getComputedStyle(node);
    if (style.display === 'none' || style.contentVisibility === 'hidden' || Number(style.opacity) === 0) return false;
  }
  return true;
}

/**
 * A text fragment's box cut to its line box: with a line-height below the font's own height the
 * browser lets the font's boxes of adjacent lines overlap by design, and glyphs do not collide.
 */
function lineBoxOf(rect: Box, lineHeight: string): Box {
  const height = parseFloat(lineHeight);
  const excess = rect.bottom - rect.top - height;
  return Number.isFinite(height) && excess > 0 ? { ...rect, top: rect.top + excess / 2, bottom: rect.bottom - excess / 2 } : rect;
}

/** The region an element clips its content to (overflow, contain:paint, clip, clip-path), or null when it does not clip. */
function ownClip(element: Element, style: CSSStyleDeclaration): Box | null {
  const border = boxOf(element.getBoundingClientRect());
  let clip: Box | null = null;
  const px = (value: string) => parseFloat(value) || 0;
  const padding = {
    left: border.left + px(style.borderLeftWidth),
    top: border.top + px(style.borderTopWidth),
    right: border.right - px(style.borderRightWidth),
    bottom: border.bottom - px(style.borderBottomWidth),
  };
  const paint = /paint|strict|content/.test(style.contain);
  if (style.overflowX !== 'visible' || paint) clip = { ...UNBOUNDED, left: padding.left, right: padding.right };
  if (style.overflowY !== 'visible' || paint) clip = { ...(clip ?? UNBOUNDED), top: padding.top, bottom: padding.bottom };
  // `clip: rect(top, right, bottom, left)` of an absolutely positioned element, from its border box.
  const rect = /^rect\((.+)\)$/.exec(style.clip);
  if (rect && (style.position === 'absolute' || style.position === 'fixed')) {
    const [top, right, bottom, left] = rect[1]!.split(/,\s*|\s+/).map((v) => (v === 'auto' ? null : px(v)));
    const cut = { left: border.left + (left ?? 0), top: border.top + (top ?? 0), right: right == null ? border.right : border.left + right, bottom: bottom == null ? border.bottom : border.top + bottom };
    clip = intersectBoxes(clip ?? UNBOUNDED, cut) ?? { left: 0, top: 0, right: 0, bottom: 0 };
  }
  if (style.clipPath !== 'none') {
    const cut = insetOf(border, style.clipPath);
    clip = intersectBoxes(clip ?? UNBOUNDED, cut) ?? { left: 0, top: 0, right: 0, bottom: 0 };
  }
  return clip;
}

/**
 * The part of a border box a `clip-path` keeps: `inset()` exactly (percentages of the width for
 * the sides, of the height for top and bottom; `inset(50%)` keeps nothing), any other shape as the
 * whole border box.
 */
function insetOf(border: Box, clipPath: string): Box {
  const inset = /^inset\(([^)]*)\)/.exec(clipPath);
  if (!inset) return border;
  const values = inset[1]!.split(/\s+round\s/)[0]!.trim().split(/\s+/);
  const [top = '0', right = top, bottom = top, left = right] = values;
  const length = (value: string, basis: number) => (value.endsWith('%') ? (parseFloat(value) / 100) * basis : parseFloat(value) || 0);
  const width = border.right - border.left;
  const height = border.bottom - border.top;
  return { left: border.left + length(left, width), top: border.top + length(top, height), right: border.right - length(right, width), bottom: border.bottom - length(bottom, height) };
}

/** Whether a box of this style is the containing block of absolutely (or fixed) positioned descendants. */
function containsPositioned(style: CSSStyleDeclaration, fixed: boolean): boolean {
  const establishes = style.transform !== 'none' || style.perspective !== 'none' || style.filter !== 'none' || /paint|layout|strict|content/.test(style.contain);
  return establishes || (!fixed && style.position !== 'static');
}

/**
 * What the ancestors of `first` (it included, the host excluded) let through. An ancestor clips
 * only what lies in its containing-block chain: an absolutely positioned box escapes the overflow
 * of ancestors below its containing block. The host and the page above it never clip: a host that
 * hid what overflows would make "inside the player" hold by hiding the text that breaks it.
 */
function clipRegion(first: Element | null, host: Element, position: string): Box {
  let clip = UNBOUNDED;
  let escaping: string | null = position === 'absolute' || position === 'fixed' ? position : null;
  for (let element = first; element && element !== host; element = composedParent(element)) {
    const style = getComputedStyle(element);
    if (escaping === null || containsPositioned(style, escaping === 'fixed')) {
      escaping = null;
      const own = ownClip(element, style);
      if (own) clip = intersectBoxes(clip, own) ?? { left: 0, top: 0, right: 0, bottom: 0 };
    }
    if (escaping === null && (style.position === 'absolute' || style.position === 'fixed')) escaping = style.position;
  }
  return clip;
}

/** Every shadow root under `root`, `root` included, depth first. */
function shadowRootsUnder(root: ShadowRoot | Document): Array<ShadowRoot | Document> {
  const roots: Array<ShadowRoot | Document> = [root];
  for (const element of Array.from(root.querySelectorAll('*'))) if (element.shadowRoot) roots.push(...shadowRootsUnder(element.shadowRoot));
  return roots;
}

/** The drawn part of each non-blank text node of the host's shadow tree. */
function measureTexts(host: Element): TextBox[] {
  const texts: TextBox[] = [];
  for (const root of shadowRootsUnder(host.shadowRoot!)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = composedParent(node);
      if (!node.textContent?.trim() || !parent || !isRendered(parent, host) || parent.closest('style, script, template')) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const clip = clipRegion(parent, host, 'static');
      const lineHeight = getComputedStyle(parent).lineHeight;
      const rects = Array.from(range.getClientRects())
        .map((rect) => intersectBoxes(lineBoxOf(boxOf(rect), lineHeight), clip))
        .filter((rect): rect is Box => rect !== null);
      if (rects.length) texts.push({ text: node.textContent.trim().replace(/\s+/g, ' '), rects });
    }
  }
  return texts;
}

/** Every drawn control of the host's shadow tree; one scrolled out of sight entirely is left out. */
function measureControls(host: Element, selector: string): ControlBox[] {
  const controls: ControlBox[] = [];
  for (const root of shadowRootsUnder(host.shadowRoot!)) {
    for (const control of Array.from(root.querySelectorAll(selector))) {
      if (!isRendered(control, host)) continue;
      const box = boxOf(control.getBoundingClientRect());
      const visible = intersectBoxes(box, clipRegion(composedParent(control), host, getComputedStyle(control).position));
      if (!visible) continue;
      const name = control.getAttribute('aria-label') ?? control.textContent?.trim().replace(/\s+/g, ' ') ?? '';
      controls.push({ name: `${control.localName}${name ? ` "${name}"` : ''}`, box, visible });
    }
  }
  return controls;
}

/** The drawn part of every element of the host's shadow tree that paints a background. */
function measureSurfaces(host: Element): Box[] {
  const surfaces: Box[] = [];
  for (const root of shadowRootsUnder(host.shadowRoot!)) {
    for (const element of Array.from(root.querySelectorAll('*'))) {
      const style = getComputedStyle(element);
      const painted = style.backgroundColor !== 'rgba(0, 0, 0, 0)' && style.backgroundColor !== 'transparent';
      if (!painted || !isRendered(element, host)) continue;
      const visible = intersectBoxes(boxOf(element.getBoundingClientRect()), clipRegion(composedParent(element), host, style.position));
      if (visible) surfaces.push(visible);
    }
  }
  return surfaces;
}

/** The whole measurement: the player's box, the drawn text, the drawn controls and the painted boxes. */
function measureLayout(hostSelector: string, playerSelector: string, controlSelector: string): OverlayLayout {
  const host = document.querySelector(hostSelector);
  const player = document.querySelector(playerSelector);
  if (!host?.shadowRoot || !player) throw new Error(`no ${host ? playerSelector : `${hostSelector} with an open shadow root`} on the page`);
  return { player: boxOf(player.getBoundingClientRect()), texts: measureTexts(host), controls: measureControls(host, controlSelector), surfaces: measureSurfaces(host) };
}

const IN_PAGE_FUNCTIONS = [intersectBoxes, boxOf, composedParent, isRendered, lineBoxOf, ownClip, insetOf, containsPositioned, clipRegion, shadowRootsUnder, measureTexts, measureControls, measureSurfaces, measureLayout];
const IN_PAGE_SOURCE = `const UNBOUNDED = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };\n${IN_PAGE_FUNCTIONS.map(String).join('\n')}`;

// ---------------------------------------------------------------------------------------------
// In Node

/** Where the overlay is: its element (with an open shadow root) and the player it must stay inside. */
export interface LayoutTarget {
  host: string;
  player: string;
}
export const OVERLAY_IN_PLAYER: LayoutTarget = { host: 'svc-engagement-overlay', player: '#player' };

/** Measures the overlay as it is drawn now. */
export async function measureOverlay(page: Page, target: LayoutTarget = OVERLAY_IN_PLAYER): Promise<OverlayLayout> {
  const call = `measureLayout(${[target.host, target.player, CONTROL_SELECTOR].map((arg) => JSON.stringify(arg)).join(', ')})`;
  return (await page.evaluate(`(() => {\n${IN_PAGE_SOURCE}\nreturn ${call};\n})()`)) as OverlayLayout;
}

/**
 * Measures again and again until nothing moved for `quietMs` (animations ended, images loaded,
 * late results drawn), and returns that layout; after `timeoutMs` returns the last one.
 */
export async function measureSettledOverlay(page: Page, options: { quietMs?: number; timeoutMs?: number; target?: LayoutTarget } = {}): Promise<OverlayLayout> {
  const { quietMs = 500, timeoutMs = 4_000, target = OVERLAY_IN_PLAYER } = options;
  const deadline = Date.now() + timeoutMs;
  const fingerprint = (layout: OverlayLayout) => JSON.stringify(layout, (_key, value: unknown) => (typeof value === 'number' ? Math.round(value * 2) / 2 : value));
  let layout = await measureOverlay(page, target);
  let quietSince = Date.now();
  while (Date.now() - quietSince < quietMs && Date.now() < deadline) {
    await page.waitForTimeout(100);
    const next = await measureOverlay(page, target);
    if (fingerprint(next) !== fingerprint(layout)) quietSince = Date.now();
    layout = next;
  }
  return layout;
}

const shortText = (text: string) => JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
const describeBox = (box: Box) => `${Math.round(box.right - box.left)}×${Math.round(box.bottom - box.top)} at (${Math.round(box.left)}, ${Math.round(box.top)})`;

/** (a) Pairs of different text nodes whose drawn boxes share more than `tolerancePx` in both directions. */
export function findTextOverlaps(layout: OverlayLayout, tolerancePx = TEXT_OVERLAP_TOLERANCE_PX): string[] {
  const problems: string[] = [];
  layout.texts.forEach((a, i) => {
    for (const b of layout.texts.slice(i + 1)) {
      const shared = a.rects.flatMap((ra) => b.rects.map((rb) => intersectBoxes(ra, rb))).find((box) => box && box.right - box.left > tolerancePx && box.bottom - box.top > tolerancePx);
      if (shared) problems.push(`text ${shortText(a.text)} overlaps text ${shortText(b.text)}: ${describeBox(shared)}`);
    }
  });
  return problems;
}

/** (b) Drawn text and the drawn part of each control that reach outside the player by more than `tolerancePx`. */
export function findOutsidePlayer(layout: OverlayLayout, tolerancePx = PLAYER_EDGE_TOLERANCE_PX): string[] {
  const { player } = layout;
  const outside = (box: Box) =>
    box.left < player.left - tolerancePx || box.top < player.top - tolerancePx || box.right > player.right + tolerancePx || box.bottom > player.bottom + tolerancePx;
  const where = `outside the player ${describeBox(player)}`;
  return [
    ...layout.texts.flatMap((text) => text.rects.filter(outside).slice(0, 1).map((rect) => `text ${shortText(text.text)} ${describeBox(rect)} is ${where}`)),
    ...layout.controls.filter((control) => outside(control.visible)).map((control) => `${control.name} ${describeBox(control.visible)} is ${where}`),
  ];
}

/** (c) Controls whose hit area (the whole border box) is smaller than `minPx` either way. */
export function findSmallTouchTargets(layout: OverlayLayout, minPx = MIN_TOUCH_TARGET_PX): string[] {
  // Half a pixel for layout rounding: 43.5 px is drawn as 44.
  const small = (box: Box) => box.right - box.left < minPx - 0.5 || box.bottom - box.top < minPx - 0.5;
  return layout.controls.filter((control) => small(control.box)).map((control) => `${control.name} is ${describeBox(control.box)}, under ${minPx}×${minPx} px`);
}

/** The middle of the video: a square of this side around the player's centre must stay uncovered. */
export const MIDDLE_SIDE_PX = 24;

/** (e) Anything drawn (text, a control, a card) over the middle of the player. */
export function findCoveredMiddle(layout: OverlayLayout, sidePx = MIDDLE_SIDE_PX): string[] {
  const { player } = layout;
  const x = (player.left + player.right) / 2;
  const y = (player.top + player.bottom) / 2;
  const middle: Box = { left: x - sidePx / 2, top: y - sidePx / 2, right: x + sidePx / 2, bottom: y + sidePx / 2 };
  const covering = [
    ...layout.surfaces.filter((box) => intersectBoxes(box, middle)).map((box) => `a painted box ${describeBox(box)}`),
    ...layout.texts.filter((text) => text.rects.some((rect) => intersectBoxes(rect, middle))).map((text) => `text ${shortText(text.text)}`),
  ];
  return covering.map((what) => `${what} covers the middle of the video ${describeBox(middle)}`);
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  /** One selector per node; a node in a shadow tree as `host >>> inner`. */
  targets: string[];
}

/** axe's impacts that fail the check. */
export const BLOCKING_IMPACTS: ReadonlyArray<string> = ['serious', 'critical'];

/** What axe found: rules broken, and rules it could not decide (e.g. contrast of text over another element). */
export interface AxeFindings {
  violations: AxeViolation[];
  incomplete: AxeViolation[];
}

let axeSource: string | null = null;

/** (d) Runs axe-core on the element matched by `contextSelector`, open shadow roots included. */
export async function runAxe(page: Page, contextSelector = OVERLAY_IN_PLAYER.player): Promise<AxeFindings> {
  if (!(await page.evaluate(() => 'axe' in window))) {
    axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    await page.addScriptTag({ content: axeSource });
  }
  return page.evaluate(async (selector) => {
    const axe = (window as unknown as { axe: typeof import('axe-core') }).axe;
    const results = await axe.run(document.querySelector(selector)!, { resultTypes: ['violations', 'incomplete'] });
    const summarise = (result: (typeof results.violations)[number]) => ({
      id: result.id,
      impact: result.impact ?? null,
      help: result.help,
      targets: result.nodes.map((node) => node.target.map((part) => (Array.isArray(part) ? part.join(' >>> ') : String(part))).join(' >>> ')),
    });
    return { violations: results.violations.map(summarise), incomplete: results.incomplete.map(summarise) };
  }, contextSelector);
}

/** Text whose contrast axe could not measure (overlapped by another element, over an image): judged by no rule here. */
export function undeterminedContrast(findings: AxeFindings): string[] {
  return findings.incomplete.filter((result) => result.id === 'color-contrast').flatMap((result) => result.targets);
}

/** The violations of impact serious or critical, one line each: rule, impact, targets. */
export function blockingViolations(findings: AxeFindings): string[] {
  return findings.violations
    .filter((violation) => violation.impact !== null && BLOCKING_IMPACTS.includes(violation.impact))
    .map((violation) => `axe ${violation.id} (${violation.impact}): ${violation.help} — ${violation.targets.join(', ')}`);
}
