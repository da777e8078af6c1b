/** Keys asked for at most in one lookup. */
export const MAX_LOOKUP_BATCH = 500;

/**
 * Answers single-key questions with one lookup per batch: the keys asked for in the same turn
 * of the event loop (up to `maxBatch`) share one call of `lookup`.
 */
export class BatchedLookup<V> {
  private waiting: Array<{ key: string; resolve: (value: V | undefined) => void; reject: (error: unknown) => void }> = [];
  private scheduled = false;

  constructor(
    private readonly lookup: (keys: string[]) => Promise<Map<string, V>>,
    private readonly maxBatch: number = MAX_LOOKUP_BATCH,
  ) {}

  get(key: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ key, resolve, reject });
      if (this.waiting.length >= this.maxBatch) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.waiting;
    this.waiting = [];
    if (!batch.length) return;
    this.lookup([...new Set(batch.map((w) => w.key))]).then(
      (found) => batch.forEach((w) => w.resolve(found.get(w.key))),
      (error: unknown) => batch.forEach((w) => w.reject(error)),
    );
  }
}
