import { describe, expect, it } from 'vitest';
import { nextAttemptAt, parseRetryAfter, RETRY_DELAYS_MS } from '../src';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
/** Random sources across [0, 1), the ends included. */
const RANDOMS = [0, 0.001, 0.25, 0.5, 0.75, 0.999, 1 - Number.EPSILON];

describe('retry schedule', () => {
  it('waits the documented delays after each attempt, and gives up after the tenth', () => {
    expect(RETRY_DELAYS_MS).toEqual([0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR]);
    RETRY_DELAYS_MS.forEach((delay, attemptsMade) => expect(nextAttemptAt(NOW, attemptsMade, () => 0.5)).toBe(NOW + delay));
    expect(nextAttemptAt(NOW, RETRY_DELAYS_MS.length, () => 0.5)).toBeNull();
  });

  it('keeps the jitter within ±20% of each delay and uses the whole range', () => {
    RETRY_DELAYS_MS.forEach((delay, attemptsMade) => {
      const waits = RANDOMS.map((r) => nextAttemptAt(NOW, attemptsMade, () => r)! - NOW);
      for (const wait of waits) {
        expect(wait).toBeGreaterThanOrEqual(Math.floor(delay * 0.8));
        expect(wait).toBeLessThanOrEqual(Math.ceil(delay * 1.2));
      }
      // The lowest random value gives the shortest wait, the highest the longest.
      expect(waits[0]).toBe(Math.round(delay * 0.8));
      expect(waits[waits.length - 1]).toBe(Math.round(delay * 1.2));
      expect([...waits].sort((a, b) => a - b)).toEqual(waits);
    });
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120 * SECOND);
    expect(parseRetryAfter(' 7 ', NOW)).toBe(7 * SECOND);
    expect(parseRetryAfter('Thu, 01 Jan 2026 14:00:00 GMT', NOW)).toBe(2 * HOUR);
    expect(parseRetryAfter(new Date(NOW + 90 * MINUTE).toUTCString(), NOW)).toBe(90 * MINUTE);
    // A date already past asks for no wait at all.
    expect(parseRetryAfter('Thu, 01 Jan 2026 11:00:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('soon', NOW)).toBeNull();
    expect(parseRetryAfter(undefined, NOW)).toBeNull();
  });

  it('honours a Retry-After longer than the next delay, up to 24 hours', () => {
    // After the second attempt the schedule waits 5 min.
    expect(nextAttemptAt(NOW, 2, () => 0.5, 2 * HOUR)).toBe(NOW + 2 * HOUR);
    expect(nextAttemptAt(NOW, 2, () => 0.5, parseRetryAfter('Thu, 01 Jan 2026 14:00:00 GMT', NOW))).toBe(NOW + 2 * HOUR);
    // Shorter than the schedule: the schedule wins.
    expect(nextAttemptAt(NOW, 2, () => 0.5, 10 * SECOND)).toBe(NOW + 5 * MINUTE);
    // Longer than 24 h: 24 h.
    expect(nextAttemptAt(NOW, 2, () => 0.5, 72 * HOUR)).toBe(NOW + 24 * HOUR);
    expect(nextAttemptAt(NOW, 2, () => 0.5, parseRetryAfter('Sun, 04 Jan 2026 12:00:00 GMT', NOW))).toBe(NOW + 24 * HOUR);
    // No attempts left: none, whatever the receiver asks.
    expect(nextAttemptAt(NOW, RETRY_DELAYS_MS.length, () => 0.5, HOUR)).toBeNull();
  });
});
