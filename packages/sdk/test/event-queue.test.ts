import { describe, expect, it } from 'vitest';
import { backoffDelay, RETRY_MAX_MS, RETRY_MIN_MS } from '../src/event-queue';

describe('offline queue backoff', () => {
  it('draws each delay at random below a cap that doubles from 1 s to 30 s (full jitter)', () => {
    expect(backoffDelay(1, () => 0.999)).toBe(Math.floor(0.999 * 2 * RETRY_MIN_MS));
    expect(backoffDelay(3, () => 0.5)).toBe(4 * RETRY_MIN_MS);
    expect(backoffDelay(20, () => 0.999)).toBeLessThan(RETRY_MAX_MS);
    expect(backoffDelay(20, () => 0)).toBe(RETRY_MIN_MS / 4);
  });
});
