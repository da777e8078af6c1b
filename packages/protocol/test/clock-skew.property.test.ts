import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkTimestamp, correctClockSkew, MAX_CLIENT_EVENT_AGE_MS, MAX_FUTURE_SKEW_MS } from '../src/clock-skew';

// Epoch milliseconds between 2000 and 2100, and clock errors of up to a year either way.
const epochMs = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) });
const skewMs = fc.integer({ min: -365 * 24 * 3600_000, max: 365 * 24 * 3600_000 });
const delayMs = fc.integer({ min: -7 * 24 * 3600_000, max: 7 * 24 * 3600_000 });

describe('clock-skew correction (properties)', () => {
  it('keeps the delay the client measured between the event and sending it, whatever the client clock error', () => {
    fc.assert(
      fc.property(epochMs, skewMs, delayMs, (receivedAt, skew, delay) => {
        // The client clock runs `skew` ms off; it stamped the event `delay` ms before sending.
        const sentAt = receivedAt + skew;
        const timestamp = sentAt - delay;
        const corrected = correctClockSkew(timestamp, receivedAt, sentAt);
        expect(corrected).toBe(receivedAt - delay);
        expect(sentAt - timestamp).toBe(receivedAt - corrected);
      }),
    );
  });

  it('changes nothing when the client clock agrees with the server, or when sentAt is absent', () => {
    fc.assert(
      fc.property(epochMs, epochMs, (timestamp, receivedAt) => {
        expect(correctClockSkew(timestamp, receivedAt, receivedAt)).toBe(timestamp);
        expect(correctClockSkew(timestamp, receivedAt)).toBe(timestamp);
      }),
    );
  });

  it('keeps the order of the events of one batch', () => {
    fc.assert(
      fc.property(epochMs, skewMs, delayMs, delayMs, (receivedAt, skew, a, b) => {
        const sentAt = receivedAt + skew;
        const first = correctClockSkew(sentAt - Math.max(a, b), receivedAt, sentAt);
        const second = correctClockSkew(sentAt - Math.min(a, b), receivedAt, sentAt);
        expect(first).toBeLessThanOrEqual(second);
      }),
    );
  });

  it('judges a corrected timestamp by the documented window only', () => {
    fc.assert(
      fc.property(epochMs, fc.integer({ min: -30 * 24 * 3600_000, max: 30 * 24 * 3600_000 }), fc.boolean(), (receivedAt, offset, allowOld) => {
        const verdict = checkTimestamp(receivedAt + offset, receivedAt, { allowOld });
        const expected = offset > MAX_FUTURE_SKEW_MS ? 'timestamp_in_future' : !allowOld && -offset > MAX_CLIENT_EVENT_AGE_MS ? 'timestamp_too_old' : 'ok';
        expect(verdict).toBe(expected);
      }),
    );
  });
});
