/**
 * Runs async jobs one at a time, in order. A DuckDB connection executes one statement at a
 * time, and a transaction must not interleave with another caller's statements.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(job: () => Promise<T>): Promise<T> {
    const result = this.tail.then(job, job);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Resolves once every job queued so far has finished. */
  drain(): Promise<void> {
    return this.tail.then(() => undefined);
  }
}
