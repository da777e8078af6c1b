/**
 * Where the viewer's playhead is in server time. HLS and DASH players play 5–30 s behind the
 * live edge; an overlay shown "now" belongs to the moment the playhead reaches later.
 *
 * A player source is any of:
 * - an `HTMLMediaElement`: `getStartDate()` + `currentTime` when the stream carries
 *   `EXT-X-PROGRAM-DATE-TIME` (Safari's native HLS), else the distance from the end of its
 *   seekable range (the live edge) to `currentTime`;
 * - `{ playingDate: Date }` (hls.js instances have it when the playlist has program date times);
 * - `{ playheadDate(): Date | number }` (e.g. Shaka: `() => player.getPlayheadTimeAsDate()`);
 * - `{ latency: number | (() => number) }`, seconds behind the live edge (hls.js `latency`,
 *   Video.js `liveTracker.liveCurrentTime() - currentTime()`).
 */
export type PlayerSource =
  | HTMLMediaElement
  | { playingDate?: Date | null; playheadDate?: () => Date | number | null; latency?: number | (() => number); currentTime?: number };

/** Server time (ms) of the frame the viewer sees; `serverNowMs` when the player cannot tell (or throws). */
export function playheadServerMs(player: PlayerSource, serverNowMs: number): number {
  try {
    return readPlayhead(player, serverNowMs);
  } catch {
    return serverNowMs;
  }
}

function readPlayhead(player: PlayerSource, serverNowMs: number): number {
  const source = player as Record<string, unknown>;
  const date = typeof source.playheadDate === 'function' ? (source.playheadDate as () => unknown)() : source.playingDate;
  const fromDate = dateMs(date);
  if (fromDate !== null) return fromDate;
  if (source.latency !== undefined) {
    const latency = typeof source.latency === 'function' ? (source.latency as () => unknown)() : source.latency;
    return typeof latency === 'number' && Number.isFinite(latency) && latency > 0 ? serverNowMs - latency * 1_000 : serverNowMs;
  }
  if (typeof HTMLMediaElement !== 'undefined' && player instanceof HTMLMediaElement) return mediaPlayhead(player, serverNowMs);
  return serverNowMs;
}

function mediaPlayhead(media: HTMLMediaElement, serverNowMs: number): number {
  const start = dateMs((media as HTMLMediaElement & { getStartDate?: () => Date }).getStartDate?.());
  if (start !== null) return start + media.currentTime * 1_000;
  const seekable = media.seekable;
  if (!seekable || !seekable.length || Number.isFinite(media.duration)) return serverNowMs;
  const behind = seekable.end(seekable.length - 1) - media.currentTime;
  return behind > 0 ? serverNowMs - behind * 1_000 : serverNowMs;
}

function dateMs(value: unknown): number | null {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'number' ? value : NaN;
  return Number.isFinite(ms) && ms > 0 ? ms : null;
}
