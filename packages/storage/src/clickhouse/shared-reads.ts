/** A value shared by the readers that asked for it while it was being made, released once the last is done. */
export interface SharedValue<T> {
  value: T;
  release(): Promise<void>;
}

/** One reader's hold on a shared value: `done` when it no longer reads it (the last one's waits for the release). */
export interface Hold<T> {
  value: Promise<T>;
  done(): Promise<void>;
}

interface Entry<T> {
  made: Promise<SharedValue<T>>;
  holders: number;
}

/**
 * Values made per key and shared by every reader that asks for the key while the value is being
 * made (the panels of one overview, asked for together); a reader asking after it was made gets
 * one of its own. The value is released when its last holder is done (or at once if making it
 * failed), so what it holds (tables of a read) lives exactly as long as its reads; the last
 * reader's `done` waits for it, so that nothing of a read still runs after its answer (a
 * connection closed then would cut it short).
 */
export class SharedReads<T> {
  private readonly making = new Map<string, Entry<T>>();

  hold(key: string, make: () => Promise<SharedValue<T>>): Hold<T> {
    let entry = this.making.get(key);
    if (!entry) {
      const made = make();
      const created: Entry<T> = { made, holders: 0 };
      entry = created;
      this.making.set(key, created);
      const forget = () => {
        if (this.making.get(key) === created) this.making.delete(key);
      };
      made.then(forget, forget);
    }
    const held = entry;
    held.holders++;
    let released = false;
    return {
      value: held.made.then((shared) => shared.value),
      done: async () => {
        if (released) return;
        released = true;
        if (--held.holders > 0) return;
        // A reader may still ask for it while it is being made: released only if none did.
        await held.made
          .then((shared) => (held.holders === 0 && this.making.get(key) !== held ? shared.release() : undefined))
          .catch(() => undefined);
      },
    };
  }
}
