import type { KV, KvEntry } from '@nats-io/kv';

/** First wait before an abandoned claim is given back, ms; doubled after each try. */
export const GIVE_BACK_FIRST_WAIT_MS = 1_000;
/** Longest wait between two tries to give back an abandoned claim, ms. */
export const GIVE_BACK_MAX_WAIT_MS = 5 * 60 * 1000;
/**
 * How long an abandoned attempt whose claim is not found is still looked for, ms: a create the
 * client held while it reconnected may reach the server this late.
 */
export const LATE_LANDING_MS = 10 * 60 * 1000;

export interface AbandonedClaimsOptions {
  /** The bucket's max age, ms: no claim outlives it, so nothing is given back after it. */
  ttlMs: number;
  /** Runs one KV request within the claims' timeout. */
  inTime<T>(request: () => Promise<T>): Promise<T>;
  /** Whether the node's NATS connection is still open (a closed one ends the tries). */
  open(): boolean;
  /** The clock; `Date.now` by default. */
  now?: () => number;
  /** First wait, ms; default `GIVE_BACK_FIRST_WAIT_MS`. */
  firstWaitMs?: number;
}

/** An attempt's claim of one key that this node gave up on. */
interface Abandoned {
  key: string;
  attempt: string;
  sinceMs: number;
  waitMs: number;
  /** Whether the claim is known to have landed (a release's, or one a try found): once not found, it is gone. */
  landed: boolean;
  timer: NodeJS.Timeout | null;
}

/** What one try to give a claim back found: 'failed' after finding it (`found`) or not. */
type GiveBack = 'given back' | 'not there' | { failed: true; found: boolean };

/** The attempt a claim's value carries (`{"claim":…,"attempt":…}`), if any. */
export function attemptOf(entry: KvEntry): string | null {
  try {
    const attempt = entry.json<{ attempt?: unknown }>().attempt;
    return typeof attempt === 'string' ? attempt : null;
  } catch {
    return null;
  }
}

/**
 * The claims this node took or may have taken but gave up: a create that timed out (it may land
 * later), or a release that failed. The viewer was told that nothing counts, so none of them may
 * lock the viewer out: each is deleted in the background, only while the key still carries that
 * attempt (get, then delete at that revision), with waits doubling up to
 * `GIVE_BACK_MAX_WAIT_MS`, until it is gone or the bucket's max age passed. Meanwhile a claim
 * of the same key may take it over (`holds`).
 */
export class AbandonedClaims {
  private readonly byKey = new Map<string, Map<string, Abandoned>>();
  private readonly now: () => number;
  private readonly firstWaitMs: number;

  constructor(
    private readonly kv: KV,
    private readonly options: AbandonedClaimsOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.firstWaitMs = options.firstWaitMs ?? GIVE_BACK_FIRST_WAIT_MS;
  }

  /** Whether `attempt` is one this node gave up on `key`. */
  holds(key: string, attempt: string): boolean {
    return this.byKey.get(key)?.has(attempt) ?? false;
  }

  /** The attempt's claim of `key` is settled (taken over, or given back): no more tries. */
  forget(key: string, attempt: string): void {
    const attempts = this.byKey.get(key);
    const abandoned = attempts?.get(attempt);
    if (!attempts || !abandoned) return;
    if (abandoned.timer) clearTimeout(abandoned.timer);
    attempts.delete(attempt);
    if (!attempts.size) this.byKey.delete(key);
  }

  /**
   * A request of `attempt` on `key` went unanswered and may land later (`landed`: the claim is
   * known to have been taken, as for a release): given back once it does.
   */
  remember(key: string, attempt: string, landed = false): void {
    if (this.holds(key, attempt)) return;
    const abandoned: Abandoned = { key, attempt, sinceMs: this.now(), waitMs: this.firstWaitMs, timer: null, landed };
    let attempts = this.byKey.get(key);
    if (!attempts) this.byKey.set(key, (attempts = new Map()));
    attempts.set(attempt, abandoned);
    this.schedule(abandoned);
  }

  /**
   * Gives back the claim `attempt` holds on `key` now (its requests run by `inTime`, by default
   * each within the claims' timeout); when that fails, remembers it and gives it back later.
   * Never throws.
   */
  async giveBack(key: string, attempt: string, inTime: AbandonedClaimsOptions['inTime'] = this.options.inTime): Promise<void> {
    if (typeof (await this.tryGiveBack(key, attempt, inTime)) === 'object') this.remember(key, attempt, true);
  }

  /** How many abandoned claims wait to be given back (for tests and logs). */
  get size(): number {
    let size = 0;
    for (const attempts of this.byKey.values()) size += attempts.size;
    return size;
  }

  private schedule(abandoned: Abandoned): void {
    abandoned.timer = setTimeout(() => void this.retry(abandoned), abandoned.waitMs);
    // The tries never keep a process alive.
    abandoned.timer.unref();
  }

  private async retry(abandoned: Abandoned): Promise<void> {
    abandoned.timer = null;
    if (!this.holds(abandoned.key, abandoned.attempt)) return;
    if (!this.options.open()) return this.forget(abandoned.key, abandoned.attempt);
    const outcome = await this.tryGiveBack(abandoned.key, abandoned.attempt, this.options.inTime);
    if (typeof outcome === 'object' && outcome.found) abandoned.landed = true;
    const age = this.now() - abandoned.sinceMs;
    // A claim that landed and is not found any more is gone (a delete that timed out may have done it).
    const gone = outcome === 'not there' && (abandoned.landed || age >= LATE_LANDING_MS);
    const settled = outcome === 'given back' || gone || age >= this.options.ttlMs;
    if (settled) return this.forget(abandoned.key, abandoned.attempt);
    abandoned.waitMs = Math.min(abandoned.waitMs * 2, GIVE_BACK_MAX_WAIT_MS);
    if (this.holds(abandoned.key, abandoned.attempt)) this.schedule(abandoned);
  }

  private async tryGiveBack(key: string, attempt: string, inTime: AbandonedClaimsOptions['inTime']): Promise<GiveBack> {
    let found = false;
    try {
      const entry = await inTime(() => this.kv.get(key));
      if (!entry || entry.operation !== 'PUT' || attemptOf(entry) !== attempt) return 'not there';
      found = true;
      // At that revision only: a claim of another attempt taken meanwhile stays.
      await inTime(() => this.kv.delete(key, { previousSeq: entry.revision }));
      return 'given back';
    } catch {
      return { failed: true, found };
    }
  }
}
