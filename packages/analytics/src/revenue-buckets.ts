import type { RevenueMinute } from '@svc/storage';
import { bucketStart, nextBucketStart } from './viewer-buckets';

const round2 = (value: number) => Math.round(value * 100) / 100;

export interface RevenuePoint {
  at: number;
  gross: number;
  orders: number;
}

/**
 * Revenue over time per currency, in the viewer chart's buckets (from the one holding `fromMs`
 * to the one holding `endMs`, local times of `timeZone`): each bucket sums the orders of its
 * minutes, 0 where there were none. Currencies in alphabetical order.
 */
export function revenueBuckets(minutes: readonly RevenueMinute[], fromMs: number, endMs: number, bucketMs: number, timeZone: string): Array<{ currency: string; points: RevenuePoint[] }> {
  const currencies = [...new Set(minutes.map((m) => m.currency))].sort();
  return currencies.map((currency) => {
    const own = minutes.filter((m) => m.currency === currency);
    const points: RevenuePoint[] = [];
    let i = 0;
    for (let start = bucketStart(fromMs, bucketMs, timeZone); start < endMs; ) {
      const next = nextBucketStart(start, bucketMs, timeZone);
      while (i < own.length && own[i]!.at < start) i++;
      const point = { at: start, gross: 0, orders: 0 };
      while (i < own.length && own[i]!.at < next) {
        point.gross += own[i]!.gross;
        point.orders += own[i++]!.orders;
      }
      point.gross = round2(point.gross);
      points.push(point);
      start = next;
    }
    return { currency, points };
  });
}
