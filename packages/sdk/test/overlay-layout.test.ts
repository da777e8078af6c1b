import { describe, expect, it } from 'vitest';
import type { Overlay } from '@svc/protocol';
import { arrange, layoutMode } from '../src/overlay/overlay-layout';

let seq = 0;
function overlay(body: Record<string, unknown>): Overlay {
  const id = `o${++seq}`;
  return { id, broadcastId: 'b', active: true, createdAt: '', updatedAt: '', ...body } as Overlay;
}
const poll = () => overlay({ type: 'poll', question: 'Q?', options: ['a', 'b'] });
const contest = () => overlay({ type: 'contest', title: 'Win' });
const lineup = () => overlay({ type: 'lineup', items: [{ title: 'x' }] });
const moment = () => overlay({ type: 'sponsor_moment', sponsorId: 's', message: 'm' });
const product = (placement = 'carousel') => overlay({ type: 'product', name: 'p', price: 1, currency: 'EUR', placement });

describe('the overlay layout model', () => {
  it('takes the phone layout from the player box, not the window: upright and narrow only', () => {
    expect(layoutMode({ width: 320, height: 568 })).toBe('portrait');
    expect(layoutMode({ width: 390, height: 844 })).toBe('portrait');
    expect(layoutMode({ width: 844, height: 390 })).toBe('wide');
    expect(layoutMode({ width: 768, height: 1024 })).toBe('wide');
    expect(layoutMode({ width: 1920, height: 1080 })).toBe('wide');
    // A small player on a big screen is laid out for its own size.
    expect(layoutMode({ width: 360, height: 640 })).toBe('portrait');
    // 16:9 across a phone held upright, or a phone on its side with a short screen.
    expect(layoutMode({ width: 390, height: 219 })).toBe('compact');
    expect(layoutMode({ width: 568, height: 320 })).toBe('compact');
  });

  it('places the busiest combination on a tall phone: banner, sheet and carousel together', () => {
    const [p, m, a, b] = [poll(), moment(), product(), product()];
    const layout = arrange([p!, a!, m!, b!], { width: 390, height: 844 });
    expect(Object.fromEntries(layout.placed)).toEqual({ [p!.id]: 'sheet', products: 'shelf', [m!.id]: 'banner' });
    expect(layout.queued).toEqual([]);
  });

  it('keeps the sheet and the carousel together on a short phone, the carousel dense', () => {
    const [a, p, c] = [product(), poll(), contest()];
    const layout = arrange([a!, p!, c!], { width: 320, height: 568 });
    expect(Object.fromEntries(layout.placed)).toEqual({ [p!.id]: 'sheet', products: 'shelf' });
    // Poll and contest share the sheet: the contest waits for the poll to go.
    expect(layout.queued).toEqual([c!.id]);
    expect(layout.dense).toBe(true);
    expect(Object.fromEntries(arrange([a!, c!], { width: 320, height: 568 }).placed)).toEqual({ [c!.id]: 'sheet', products: 'shelf' });
    expect(arrange([a!], { width: 320, height: 568 }).dense).toBe(false);
    expect(arrange([a!, p!], { width: 390, height: 844 }).dense).toBe(false);
  });

  it('uses side cards on wide players and queues what has no place, in order of arrival', () => {
    const [c, p, l, a, m, m2] = [contest(), poll(), lineup(), product(), moment(), moment()];
    const layout = arrange([c!, p!, l!, a!, m!, m2!], { width: 1280, height: 720 });
    expect(Object.fromEntries(layout.placed)).toEqual({ [p!.id]: 'left', [c!.id]: 'right', [m!.id]: 'banner' });
    expect(layout.queued).toEqual([m2!.id, 'products', l!.id]);
  });

  it('puts a lineup on the right, or on the left when products hold the right', () => {
    const l = lineup();
    expect(arrange([l], { width: 1280, height: 720 }).placed.get(l.id)).toBe('right');
    expect(arrange([product(), l], { width: 1280, height: 720 }).placed.get(l.id)).toBe('left');
  });

  it('shows one card at a time at the bottom of a small inline player', () => {
    const [p, a, m] = [poll(), product(), moment()];
    const layout = arrange([a!, p!, m!], { width: 390, height: 219 });
    expect(Object.fromEntries(layout.placed)).toEqual({ [p!.id]: 'sheet' });
    expect(layout.queued).toEqual([m!.id, 'products']);
  });

  it('shows a banner product in the banner place, after a sponsor moment', () => {
    const [b, m] = [product('banner'), moment()];
    const layout = arrange([b!, m!], { width: 390, height: 844 });
    expect(layout.placed.get(m!.id)).toBe('banner');
    expect(layout.queued).toEqual([b!.id]);
  });
});
