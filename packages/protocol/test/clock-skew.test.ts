import { describe, expect, it } from 'vitest';
import { checkTimestamp, correctClockSkew, MAX_CLIENT_EVENT_AGE_MS, MAX_FUTURE_SKEW_MS } from '../src/clock-skew';

describe('clock skew', () => {
  const received = Date.UTC(2026, 10, 21, 12);

  it('moves a timestamp by the difference between the client clock and the server clock', () => {
    // Client clock 5 minutes slow; event stamped 2 s before sending.
    const sentAt = received - 300_000;
    expect(correctClockSkew(sentAt - 2000, received, sentAt)).toBe(received - 2000);
  });

  it('trusts the timestamp when sentAt is absent', () => {
    expect(correctClockSkew(123, received)).toBe(123);
  });

  it('rejects events from the future and, from clients only, events that are too old', () => {
    expect(checkTimestamp(received + MAX_FUTURE_SKEW_MS, received, { allowOld: false })).toBe('ok');
    expect(checkTimestamp(received + MAX_FUTURE_SKEW_MS + 1, received, { allowOld: true })).toBe('timestamp_in_future');
    expect(checkTimestamp(received - MAX_CLIENT_EVENT_AGE_MS - 1, received, { allowOld: false })).toBe('timestamp_too_old');
    expect(checkTimestamp(received - MAX_CLIENT_EVENT_AGE_MS - 1, received, { allowOld: true })).toBe('ok');
  });
});
