import type { Overlay } from '@svc/protocol';

/** An overlay the server hid, kept a while for viewers whose video has not reached the hide yet. */
export interface RetiredOverlay {
  overlay: Overlay;
  hiddenAtMs: number;
}

/** Longer than any live latency players run with (5–30 s). */
export const RETIRED_KEEP_MS = 60_000;

/**
 * The overlays to draw when the playhead is at `playheadMs` (server time): each from the
 * moment it was shown to the moment it was hidden. Without a playhead (no player), what the
 * server shows now.
 */
export function dueOverlays(active: readonly Overlay[], retired: readonly RetiredOverlay[], playheadMs: number | null): Overlay[] {
  if (playheadMs === null) return [...active];
  const shownBy = (overlay: Overlay) => shownMs(overlay) <= playheadMs;
  const due = active.filter(shownBy);
  for (const { overlay, hiddenAtMs } of retired) {
    if (playheadMs < hiddenAtMs && shownBy(overlay) && !due.some((o) => o.id === overlay.id)) due.push(overlay);
  }
  // In the order they were shown, so the layout's queue keeps its arrival order.
  return due.sort((a, b) => shownMs(a) - shownMs(b));
}

/** When the server showed it; overlays of servers that do not say count as shown long ago. */
function shownMs(overlay: Overlay): number {
  const ms = overlay.shownAt ? Date.parse(overlay.shownAt) : NaN;
  return Number.isFinite(ms) ? ms : 0;
}
