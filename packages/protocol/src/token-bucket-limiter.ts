import type { Clock } from './clock';

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
 * Used by the HTTP rate limits and by the WebSocket gateway's upgrade limit per address.
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

  /** Takes `cost` tokens when the bucket holds that many; refuses (and takes nothing) otherwise. */
  take(key: string, cost = 1): LimitDecision {
    const bucket = this.refilled(key);
    const allowed = bucket.tokens >= cost;
    if (allowed) bucket.tokens -= cost;
    return this.decision(bucket, allowed, cost);
  }

  /**
   * Takes `cost` tokens whatever the bucket holds, down to a debt of one full bucket: for a
   * cost learnt only after the request passed (e.g. its credential turned out wrong), so that
   * the next requests wait for it.
   */
  charge(key: string, cost: number): void {
    const bucket = this.refilled(key);
    bucket.tokens = Math.max(-this.capacity, bucket.tokens - cost);
  }

  private refilled(key: string): Bucket {
    const now = this.clock.now();
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, updatedAt: now };
    bucket.tokens = Math.min(this.capacity, bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.ratePerSecond);
    bucket.updatedAt = now;
    this.buckets.set(key, bucket);
    return bucket;
  }

  private decision(bucket: Bucket, allowed: boolean, cost: number): LimitDecision {
    return {
      allowed,
      limit: this.capacity,
      remaining: Math.max(0, Math.floor(bucket.tokens)),
      resetSeconds: Math.ceil((this.capacity - bucket.tokens) / this.ratePerSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((cost - bucket.tokens) / this.ratePerSecond)),
    };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    // From the deepest debt (one bucket below empty), a bucket is full after two bucketfuls.
    const fullAfterMs = ((2 * this.capacity) / this.ratePerSecond) * 1000;
    for (const [key, bucket] of this.buckets) if (now - bucket.updatedAt > fullAfterMs) this.buckets.delete(key);
  }
}
