const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Delay before each attempt (DESIGN 8): the first at once, the last 24 h after the one before. */
export const RETRY_DELAYS_MS = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR];
/** An endpoint that has failed without a success for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * HOUR;
/** Jitter spreads retries of many deliveries by up to ±20% of their delay. */
export const RETRY_JITTER = 0.2;
/** A receiver's Retry-After is honoured up to this long. */
export const MAX_RETRY_AFTER_MS = 24 * HOUR;

/**
 * When the next attempt is due after `attemptsMade` attempts, or null when none is left.
 * `random` returns [0, 1) and is injected so tests are deterministic.
 */
export function nextAttemptAt(now: number, attemptsMade: number, random: () => number, retryAfterMs: number | null = null): number | null {
  const delay = RETRY_DELAYS_MS[attemptsMade];
  if (delay === undefined) return null;
  const jittered = delay * (1 + RETRY_JITTER * (2 * random() - 1));
  const wait = Math.max(jittered, retryAfterMs === null ? 0 : Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
  return now + Math.round(wait);
}

/** Retry-After as seconds or an HTTP date, in ms from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
