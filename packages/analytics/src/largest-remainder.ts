/**
 * Shares of a whole that add up to exactly 1 at a given precision (largest-remainder method):
 * each count gets the floor of its exact share in `units` (1000: tenths of a percent), and the
 * units left over go one each to the largest remainders (ties: the earlier count). Rounding
 * each share on its own can make 4/21, 8/21 and 9/21 add up to 100.1%. All zeros when `counts`
 * sum to 0.
 */
export function largestRemainderShares(counts: readonly number[], units = 1000): number[] {
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total <= 0) return counts.map(() => 0);
  const exact = counts.map((count) => (count * units) / total);
  const floors = exact.map(Math.floor);
  let left = units - floors.reduce((sum, floor) => sum + floor, 0);
  const byRemainder = exact.map((value, i) => ({ i, remainder: value - floors[i]! })).sort((a, b) => b.remainder - a.remainder || a.i - b.i);
  for (const { i } of byRemainder) {
    if (left <= 0) break;
    floors[i]! += 1;
    left -= 1;
  }
  return floors.map((floor) => floor / units);
}
