/**
 * The layout model: where each overlay goes for the size and orientation of the player (the
 * element's own box, not the window), and which wait their turn. Regions never overlap and
 * always leave the middle of the video free; the style sheet draws them (`data-mode`).
 *
 * - `portrait` (a phone held upright): a top strip (sponsor banner, notices, cart) and a
 *   bottom area with one sheet (poll, contest or lineup) above a swipeable product carousel.
 *   On a short player with both, the carousel's cards are dense (one row each).
 * - `wide` (landscape phones, tablets, desktop): a banner across the top, side cards on the
 *   left (poll, contest) and a column on the right (cart, notices, products or lineup).
 * - `compact` (a small inline player, e.g. 16:9 across a phone held upright): one card at a
 *   time, which may reach the middle since there is no room to spare.
 */
import type { Overlay } from '@svc/protocol';

export type LayoutMode = 'portrait' | 'wide' | 'compact';
export type Slot = 'banner' | 'sheet' | 'shelf' | 'left' | 'right';

export interface PlayerSize {
  width: number;
  height: number;
}

/** Narrower than this and taller than wide: the phone layout. */
export const PORTRAIT_MAX_WIDTH_PX = 600;
/** A portrait player lower than this makes the carousel dense when a sheet is shown too. */
export const PORTRAIT_ROOMY_HEIGHT_PX = 720;

/** Lower than this: too small for side cards or a free middle. */
export const COMPACT_MAX_HEIGHT_PX = 360;

export function layoutMode({ width, height }: PlayerSize): LayoutMode {
  if (height < COMPACT_MAX_HEIGHT_PX) return 'compact';
  return width < PORTRAIT_MAX_WIDTH_PX && height >= width ? 'portrait' : 'wide';
}

/** What shows together: carousel products are one group, every other overlay its own. */
export interface OverlayGroup {
  key: string;
  overlays: Overlay[];
}

/** Lower comes first when places are short. */
const PRIORITY: Record<string, number> = { poll: 0, contest: 1, product: 2, lineup: 3, sponsor_moment: 0, banner: 1 };

function kindOf(overlay: Overlay): string {
  return overlay.type === 'product' && overlay.placement === 'banner' ? 'banner' : overlay.type;
}

/** The places a kind may take, in order of preference. */
function placesFor(kind: string, mode: LayoutMode): Slot[] {
  if (kind === 'sponsor_moment' || kind === 'banner') return ['banner'];
  if (mode !== 'wide') return kind === 'product' ? ['shelf'] : ['sheet'];
  if (kind === 'product') return ['right'];
  if (kind === 'lineup') return ['right', 'left'];
  return ['left', 'right'];
}

export interface Layout {
  mode: LayoutMode;
  /** Group key → its place; groups not listed wait in the queue. */
  placed: Map<string, Slot>;
  queued: string[];
  /** The carousel shares a short bottom area with a sheet: one row per product card. */
  dense: boolean;
}

/**
 * Places groups by priority, then by the order they arrived (`overlays` in arrival order), one
 * group per place (one group in all on a compact player).
 */
export function arrange(overlays: readonly Overlay[], size: PlayerSize): Layout {
  const mode = layoutMode(size);
  const groups = groupOverlays(overlays);
  const order = groups
    .map((group, arrival) => ({ group, arrival, priority: PRIORITY[kindOf(group.overlays[0]!)] ?? 9 }))
    .sort((a, b) => a.priority - b.priority || a.arrival - b.arrival);
  const taken = new Set<Slot>();
  const placed = new Map<string, Slot>();
  const queued: string[] = [];
  for (const { group } of order) {
    const full = mode === 'compact' && taken.size > 0;
    const slot = full ? undefined : placesFor(kindOf(group.overlays[0]!), mode).find((s) => !taken.has(s));
    if (!slot) {
      queued.push(group.key);
      continue;
    }
    taken.add(slot);
    placed.set(group.key, slot);
  }
  const dense = mode === 'portrait' && size.height < PORTRAIT_ROOMY_HEIGHT_PX && taken.has('sheet') && taken.has('shelf');
  return { mode, placed, queued, dense };
}

export function groupOverlays(overlays: readonly Overlay[]): OverlayGroup[] {
  const groups: OverlayGroup[] = [];
  let products: OverlayGroup | null = null;
  for (const overlay of overlays) {
    if (overlay.type === 'product' && overlay.placement !== 'banner') {
      if (!products) groups.push((products = { key: 'products', overlays: [] }));
      products.overlays.push(overlay);
    } else {
      groups.push({ key: overlay.id, overlays: [overlay] });
    }
  }
  return groups;
}
