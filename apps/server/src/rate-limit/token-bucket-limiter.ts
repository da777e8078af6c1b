import type { Clock } from '@svc/protocol';

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again (RateLimit-Reset). */
  resetSeconds: number;
  /** Seconds to wait before the next request can pass (Retry-After); 0 when allowed. */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** Buckets idle this long are full again and can be forgotten. */
const SWEEP_INTERVAL_MS = 60_000;

/**
 * Token buckets keyed by credential or address: `ratePerSecond` sustained, bursts up to
 * `ratePerSecond × burstSeconds`. The clock is injected so tests move time instead of sleeping.
 */
export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly capacity: number;
  private lastSweep: number;

  constructor(
    private readonly ratePerSecond: number,
    burstSeconds: number,
    private readonly clock: Clock,
  ) {
    this.capacity = Math.max(1, Math.round(ratePerSecond * burstSeconds));
    this.lastSweep = clock.now();
  }

  take(key: string): LimitDecision {
    const now = this.clock.now();
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, updatedAt: now };
    bucket.tokens = Math.min(this.capacity, bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.ratePerSecond);
    bucket.updatedAt = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    return {
      allowed,
      limit: this.capacity,
      remaining: Math.floor(bucket.tokens),
      resetSeconds: Math.ceil((this.capacity - bucket.tokens) / this.ratePerSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond)),
    };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    const fullAfterMs = (this.capacity / this.ratePerSecond) * 1000;
    for (const [key, bucket] of this.buckets) if (now - bucket.updatedAt > fullAfterMs) this.buckets.delete(key);
  }
}
