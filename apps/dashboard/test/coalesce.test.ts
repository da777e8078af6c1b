import { describe, expect, it } from 'vitest';
import { coalesce, type Scheduler } from '../src/coalesce';

/** A clock moved by hand, with the timers due at each step. */
class FakeScheduler implements Scheduler {
  private at = 0;
  private timers: Array<{ due: number; run: () => void }> = [];
  now = () => this.at;
  later = (run: () => void, delayMs: number) => {
    const timer = { due: this.at + delayMs, run };
    this.timers.push(timer);
    return () => void (this.timers = this.timers.filter((t) => t !== timer));
  };
  /** Time passing inside a callback (a render's own work): no timer runs meanwhile. */
  spend(ms: number): void {
    this.at += ms;
  }
  advance(ms: number): void {
    this.at += ms;
    for (const timer of this.timers.filter((t) => t.due <= this.at)) {
      this.timers = this.timers.filter((t) => t !== timer);
      timer.run();
    }
  }
}

describe('coalesce', () => {
  it('leaves a whole interval between the end of a slow render and the start of the next', () => {
    const clock = new FakeScheduler();
    const rendered: Array<[number, number]> = [];
    const live = coalesce<number>((v) => {
      clock.spend(300);
      rendered.push([clock.now(), v]);
    }, 1_000, clock);
    live.push(1);
    live.push(2);
    clock.advance(900);
    expect(rendered).toEqual([[300, 1]]);
    clock.advance(99);
    expect(rendered).toEqual([[300, 1]]);
    clock.advance(1);
    // Started at 1,300 (a second after the first render ended), ended at 1,600.
    expect(rendered).toEqual([[300, 1], [1_600, 2]]);
  });

  it('renders the first value at once and a burst within the second once, with its newest value', () => {
    const clock = new FakeScheduler();
    const rendered: Array<[number, number]> = [];
    const live = coalesce<number>((v) => rendered.push([clock.now(), v]), 1_000, clock);
    live.push(1);
    for (let v = 2; v <= 4; v++) {
      clock.advance(250);
      live.push(v);
    }
    expect(rendered).toEqual([[0, 1]]);
    clock.advance(250);
    expect(rendered).toEqual([[0, 1], [1_000, 4]]);
    clock.advance(2_000);
    expect(rendered).toHaveLength(2);
    live.push(5);
    expect(rendered).toEqual([[0, 1], [1_000, 4], [3_000, 5]]);
  });

  it('never renders twice within the interval, whatever the arrival pattern', () => {
    const clock = new FakeScheduler();
    const at: number[] = [];
    const live = coalesce<number>(() => at.push(clock.now()), 1_000, clock);
    for (let i = 0; i < 200; i++) {
      live.push(i);
      clock.advance([10, 90, 250, 400, 999, 1_001][i % 6]!);
    }
    clock.advance(1_000);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(1_000);
    expect(at.length).toBeGreaterThan(50);
  });

  it('drops a waiting value when cancelled (the filters changed)', () => {
    const clock = new FakeScheduler();
    const rendered: number[] = [];
    const live = coalesce<number>((v) => rendered.push(v), 1_000, clock);
    live.push(1);
    live.push(2);
    live.cancel();
    clock.advance(5_000);
    expect(rendered).toEqual([1]);
  });
});
