/**
 * Runs jobs one at a time per key, in the order they were asked for (jobs of other keys run
 * meanwhile). A job runs once the one before it settled, whether it failed or not.
 */
export class TurnsByKey {
  /** The last job of each key, settled without an error; gone once a key has nothing left to run. */
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, job: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(job);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** How many keys have a job running or waiting. */
  get busyKeys(): number {
    return this.tails.size;
  }
}
