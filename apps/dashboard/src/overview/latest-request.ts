/**
 * One view's requests, one at a time: starting a request aborts the one before it, so an
 * answer that arrives late (for filters no longer shown) is never rendered.
 */
export class LatestRequest {
  private current: AbortController | null = null;

  /** Aborts the request in flight and returns the signal of the next one. */
  start(): AbortSignal {
    this.current?.abort();
    this.current = new AbortController();
    return this.current.signal;
  }

  /** Whether the request of `signal` is still the latest one (its answer may be shown). */
  isLatest(signal: AbortSignal): boolean {
    return !signal.aborted && this.current?.signal === signal;
  }

  /** Aborts the request in flight (the view is left). */
  cancel(): void {
    this.current?.abort();
    this.current = null;
  }
}
