import { describe, expect, it } from 'vitest';
import type { Overlay } from '@svc/protocol';
import { currentItem, isClosed } from '../src/overlay/cards';
import { countdown } from '../src/overlay/dom';
import { dueOverlays } from '../src/overlay/overlay-schedule';
import { playheadServerMs } from '../src/overlay/player-clock';

const at = (ms: number) => new Date(ms).toISOString();
const T = Date.parse('2026-11-25T20:00:00Z');
const overlay = (id: string, shownAtMs: number | null) =>
  ({ id, type: 'contest', title: id, broadcastId: 'b', active: true, createdAt: '', updatedAt: '', shownAt: shownAtMs === null ? null : at(shownAtMs) }) as Overlay;

describe('overlays in step with the video', () => {
  it('shows what the server shows when there is no player', () => {
    const a = overlay('a', T + 5_000);
    expect(dueOverlays([a], [], null)).toEqual([a]);
  });

  it('shows each overlay when the playhead reaches its moment and hides it when it reaches the hide', () => {
    const a = overlay('a', T);
    const b = overlay('b', T + 2_000);
    const retired = [{ overlay: overlay('c', T - 10_000), hiddenAtMs: T + 1_000 }];
    const ids = (playhead: number) => dueOverlays([a, b], retired, playhead).map((o) => o.id);
    expect(ids(T - 1)).toEqual(['c']);
    expect(ids(T)).toEqual(['c', 'a']);
    expect(ids(T + 1_000)).toEqual(['a']);
    expect(ids(T + 2_000)).toEqual(['a', 'b']);
  });

  it('reads the playhead from a latency, a program date, hls.js and a plain object', () => {
    expect(playheadServerMs({ latency: 8 }, T)).toBe(T - 8_000);
    expect(playheadServerMs({ latency: () => 12.5 }, T)).toBe(T - 12_500);
    expect(playheadServerMs({ playingDate: new Date(T - 6_000) }, T)).toBe(T - 6_000);
    expect(playheadServerMs({ playheadDate: () => T - 3_000 }, T)).toBe(T - 3_000);
    // What it cannot read counts as live.
    expect(playheadServerMs({ latency: Number.NaN }, T)).toBe(T);
    expect(playheadServerMs({ playingDate: null, latency: -1 }, T)).toBe(T);
    expect(playheadServerMs({}, T)).toBe(T);
    // A player that throws while being read (torn down, not ready) counts as live too.
    expect(playheadServerMs({ latency: () => { throw new Error('destroyed'); } }, T)).toBe(T);
    expect(playheadServerMs({ playheadDate: () => { throw new Error('not ready'); } }, T)).toBe(T);
  });
});

describe('countdowns and the lineup', () => {
  it('counts down in m:ss and h:mm:ss, never below zero', () => {
    expect(countdown(42_000)).toBe('0:42');
    expect(countdown(61_001)).toBe('1:02');
    expect(countdown(3_600_000 + 5_000)).toBe('1:00:05');
    expect(countdown(-5)).toBe('0:00');
  });

  it('closes polls and contests at closesAt (server time)', () => {
    const poll = { type: 'poll', closesAt: at(T) } as Overlay;
    expect(isClosed(poll, T - 1)).toBe(false);
    expect(isClosed(poll, T)).toBe(true);
    expect(isClosed({} as Overlay, T)).toBe(false);
  });

  it('highlights the item on now: the last whose time has come, the first when none has a time', () => {
    expect(currentItem([{}, {}, {}], T)).toBe(0);
    expect(currentItem([{ at: at(T - 60_000) }, { at: at(T - 1) }, { at: at(T + 60_000) }], T)).toBe(1);
    expect(currentItem([{ at: at(T + 1) }], T)).toBe(-1);
  });
});
