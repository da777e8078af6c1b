import type { Clock } from '@svc/protocol';

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * Runs `emit(key)` at most once per `intervalMs` per key: at once when the key has been
 * quiet for the interval, otherwise at the end of it. Calls in between fold into that one.
 */
export class KeyedThrottle {
  private readonly lastRun = new Map<string, number>();
  private readonly pending = new Map<string, unknown>();

  constructor(
    private readonly intervalMs: number,
    private readonly emit: (key: string) => void,
    private readonly clock: Clock,
    private readonly timers: Timers = realTimers,
  ) {}

  trigger(key: string): void {
    if (this.pending.has(key)) return;
    const wait = (this.lastRun.get(key) ?? -Infinity) + this.intervalMs - this.clock.now();
    if (wait <= 0) {
      this.run(key);
      return;
    }
    this.pending.set(
      key,
      this.timers.setTimeout(() => {
        this.pending.delete(key);
        this.run(key);
      }, wait),
    );
  }

  /** Forgets a key (its room closed). */
  drop(key: string): void {
    const handle = this.pending.get(key);
    if (handle !== undefined) this.timers.clearTimeout(handle);
    this.pending.delete(key);
    this.lastRun.delete(key);
  }

  /** Forgets every key that starts with `prefix`. */
  dropPrefix(prefix: string): void {
    for (const key of new Set([...this.pending.keys(), ...this.lastRun.keys()])) if (key.startsWith(prefix)) this.drop(key);
  }

  dropAll(): void {
    for (const key of [...this.pending.keys()]) this.drop(key);
    this.lastRun.clear();
  }

  private run(key: string): void {
    this.lastRun.set(key, this.clock.now());
    this.emit(key);
  }
}
