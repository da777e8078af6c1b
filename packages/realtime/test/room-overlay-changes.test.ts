import { describe, expect, it } from 'vitest';
import type { ContentChange, Overlay } from '@svc/protocol';
import { Room } from '../src/room';

const at = (ms: number) => new Date(ms).toISOString();
const lineup = (active: boolean, updatedMs: number): Overlay =>
  ({ id: 'l1', broadcastId: 'b', type: 'lineup', items: [{ title: `v${updatedMs}` }], active, createdAt: at(0), updatedAt: at(updatedMs), shownAt: at(1) }) as Overlay;
const show = (updatedMs: number): ContentChange => ({ kind: 'show', overlay: lineup(true, updatedMs) });
const update = (updatedMs: number): ContentChange => ({ kind: 'update', overlay: lineup(true, updatedMs) });
const hide = (updatedMs?: number): ContentChange => ({ kind: 'hide', overlayId: 'l1', hiddenAt: at(99), ...(updatedMs === undefined ? {} : { updatedAt: at(updatedMs) }) });
const deletion: ContentChange = { kind: 'hide', overlayId: 'l1', hiddenAt: at(99), deleted: true };

function room(overlays: Overlay[] = []): Room {
  return new Room('1:b', 1, 'b', 1, overlays, []);
}

/** What viewers are told of each change, in turn. */
function told(target: Room, changes: ContentChange[]): Array<string | null> {
  return changes.map((change) => target.applyChange(change)?.type ?? null);
}

describe('Room: overlay changes heard from several nodes', () => {
  it('applies the changes of an overlay in the order they were stored, whatever order they arrive in', () => {
    const r = room([lineup(false, 1)]);
    // A hide stored after a show, heard before it: the show changes nothing.
    expect(told(r, [hide(3), show(2)])).toEqual([null, null]);
    expect(r.activeOverlays()).toEqual([]);
    // Then a show stored later, and an update stored before it that comes last.
    expect(told(r, [show(5), update(4)])).toEqual(['overlay.show', null]);
    expect(r.activeOverlays().map((o) => o.updatedAt)).toEqual([at(5)]);
    // A change heard twice is told once.
    expect(told(r, [show(5), update(6), update(6)])).toEqual([null, 'overlay.update', null]);
  });

  it('tells viewers of a hide only when the overlay was on screen', () => {
    const r = room([lineup(true, 1)]);
    expect(told(r, [hide(2), hide(3)])).toEqual(['overlay.hide', null]);
    // An overlay the room never had on screen: nothing to tell.
    expect(room().applyChange(hide(2))).toBeNull();
  });

  it('orders the changes of an overlay created after the room opened: a hide heard first keeps the earlier show off screen', () => {
    const r = room();
    expect(told(r, [hide(3), show(2), update(2)])).toEqual([null, null, null]);
    expect(r.activeOverlays()).toEqual([]);
    expect(told(r, [show(4)])).toEqual(['overlay.show']);
  });

  it('tells viewers of an update that brings an overlay on screen as a show (its show stored earlier came late)', () => {
    const r = room([lineup(false, 1)]);
    expect(told(r, [update(3), show(2), update(4)])).toEqual(['overlay.show', null, 'overlay.update']);
  });

  it('drops every change of an overlay heard after its deletion', () => {
    const shown = room([lineup(true, 1)]);
    expect(told(shown, [deletion, show(9), update(10)])).toEqual(['overlay.hide', null, null]);
    expect(shown.activeOverlays()).toEqual([]);
    // Deleted while hidden here, while a show stored just before is still on its way.
    const hidden = room([lineup(false, 1)]);
    expect(told(hidden, [deletion, show(2)])).toEqual([null, null]);
    expect(hidden.activeOverlays()).toEqual([]);
  });

  it('applies the hides of nodes that send no stored time (older versions) as they come', () => {
    const r = room([lineup(true, 5)]);
    expect(told(r, [hide(), show(6), hide(), update(7)])).toEqual(['overlay.hide', 'overlay.show', 'overlay.hide', 'overlay.show']);
  });
});
