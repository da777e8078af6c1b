import { describe, expect, it } from 'vitest';
import { LivenessWatch, livenessPeriodMs } from '../src/liveness-watch';

const PERIOD_MS = 1_000;

/** A watch on a clock the test moves, checked as the connection's timer does: every period. */
function watchAt(startMs = 0) {
  let nowMs = startMs;
  const watch = new LivenessWatch(PERIOD_MS, () => nowMs);
  return {
    watch,
    /** Moves the clock to `atMs` (from the start) and runs a check there. */
    checkAt: (atMs: number, canPing = true) => {
      nowMs = startMs + atMs;
      return watch.check(canPing);
    },
    receiveAt: (atMs: number) => {
      nowMs = startMs + atMs;
      watch.received();
    },
  };
}

describe('LivenessWatch', () => {
  it('pings after a period of silence and gives the socket up after two periods with the ping unanswered', () => {
    const { checkAt } = watchAt();
    expect(checkAt(500)).toBe('none');
    expect(checkAt(1_000)).toBe('ping');
    expect(checkAt(1_999)).toBe('none');
    expect(checkAt(2_000)).toBe('reconnect');
  });

  it('keeps a quiet socket whose server answers the pings', () => {
    const { checkAt, receiveAt } = watchAt();
    for (let period = 1; period <= 20; period++) {
      const action = checkAt(period * PERIOD_MS);
      expect(action).not.toBe('reconnect');
      // The pong comes back well within the period.
      if (action === 'ping') receiveAt(period * PERIOD_MS + 200);
    }
  });

  it('keeps a socket that receives frames, without pinging', () => {
    const { checkAt, receiveAt } = watchAt();
    for (let period = 1; period <= 10; period++) {
      receiveAt(period * PERIOD_MS - 100);
      expect(checkAt(period * PERIOD_MS)).toBe('none');
    }
  });

  it('gives a loaded server two periods of total silence, not one missed pong', () => {
    // Silence starts just after a check: the ping goes out at the second check, the verdict at the third.
    const { checkAt, receiveAt } = watchAt();
    receiveAt(10);
    expect(checkAt(1_000)).toBe('none');
    expect(checkAt(2_000)).toBe('ping');
    // The pong is slow (almost a period) and still in time.
    receiveAt(2_950);
    expect(checkAt(3_000)).toBe('none');
    expect(checkAt(4_000)).toBe('ping');
    // Silent since 2,950: not yet two periods at 4,900 (an early check), two at 4,950.
    expect(checkAt(4_900)).toBe('none');
    expect(checkAt(4_950)).toBe('reconnect');
  });

  it('pings first when a throttled timer checks late, and judges only at the check after', () => {
    // A hidden tab's timers may run a minute apart: long silence alone is not death.
    const { checkAt, receiveAt } = watchAt();
    expect(checkAt(60_000)).toBe('ping');
    receiveAt(60_050);
    expect(checkAt(120_000)).toBe('ping');
    expect(checkAt(180_000)).toBe('reconnect');
  });

  it('gives up a socket whose handshake stays unanswered for two periods, with no ping while connecting', () => {
    const { checkAt } = watchAt();
    expect(checkAt(1_000, false)).toBe('none');
    expect(checkAt(2_000, false)).toBe('reconnect');
    // The handshake's answer (open) counts as something received.
    const answered = watchAt();
    answered.receiveAt(1_500);
    expect(answered.checkAt(2_000, false)).toBe('none');
  });
});

describe('livenessPeriodMs', () => {
  it("is the server's heartbeat, at most 15 s, and 15 s when the welcome names none", () => {
    expect(livenessPeriodMs(500)).toBe(500);
    expect(livenessPeriodMs(15_000)).toBe(15_000);
    expect(livenessPeriodMs(60_000)).toBe(15_000);
    expect(livenessPeriodMs(undefined)).toBe(15_000);
    expect(livenessPeriodMs(0)).toBe(15_000);
  });
});
