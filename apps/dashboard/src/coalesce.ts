/** The time source of `coalesce`; the browser's by default, a fake one in tests. */
export interface Scheduler {
  now(): number;
  later(run: () => void, delayMs: number): () => void;
}

const browserScheduler: Scheduler = {
  now: () => performance.now(),
  later: (run, delayMs) => {
    const handle = setTimeout(run, delayMs);
    return () => clearTimeout(handle);
  },
};

/**
 * Renders at most once per `intervalMs`, always with the newest value: the first value after
 * a quiet interval renders at once, values arriving sooner wait for the interval's end and
 * replace each other, so a burst of updates costs one render.
 */
export function coalesce<T>(render: (value: T) => void, intervalMs: number, scheduler: Scheduler = browserScheduler): { push(value: T): void; cancel(): void } {
  let lastRenderAt = -Infinity;
  let pending: { value: T } | null = null;
  let cancelTimer: (() => void) | null = null;
  const flush = () => {
    cancelTimer = null;
    if (!pending) return;
    const { value } = pending;
    pending = null;
    render(value);
    // Counted from the end of the render: a slow render must not shorten the gap to the next.
    lastRenderAt = scheduler.now();
  };
  return {
    push(value) {
      pending = { value };
      if (cancelTimer) return;
      const waitMs = lastRenderAt + intervalMs - scheduler.now();
      if (waitMs <= 0) flush();
      else cancelTimer = scheduler.later(flush, waitMs);
    },
    cancel() {
      cancelTimer?.();
      cancelTimer = null;
      pending = null;
    },
  };
}
