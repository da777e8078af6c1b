import { describe, expect, it } from 'vitest';
import { largestRemainderShares } from '../src/largest-remainder';

describe('largestRemainderShares', () => {
  it('gives 4, 8 and 9 votes of 21 shares that add up to exactly 100%', () => {
    const shares = largestRemainderShares([4, 8, 9]);
    expect(shares).toEqual([0.19, 0.381, 0.429]);
    expect(Math.round(shares.reduce((a, b) => a + b, 0) * 1000)).toBe(1000);
  });

  it('adds up to 100% for every split of up to 30 votes over three options', () => {
    for (let a = 0; a <= 30; a++) {
      for (let b = 0; a + b <= 30; b++) {
        const counts = [a, b, 30 - a - b];
        const units = largestRemainderShares(counts).map((share) => Math.round(share * 1000));
        expect(units.reduce((x, y) => x + y, 0), counts.join()).toBe(1000);
        // No share is more than one unit away from the exact one.
        counts.forEach((count, i) => expect(Math.abs(units[i]! - (count * 1000) / 30), counts.join()).toBeLessThan(1));
      }
    }
  });

  it('gives the leftover unit to the earlier of equal remainders, and zeros when nobody voted', () => {
    expect(largestRemainderShares([1, 1, 1])).toEqual([0.334, 0.333, 0.333]);
    expect(largestRemainderShares([0, 0])).toEqual([0, 0]);
    expect(largestRemainderShares([2, 0])).toEqual([1, 0]);
  });
});
