/**
 * localStorage that never throws: private modes, quotas and server rendering simply make
 * it forget.
 */
export const localStore = {
  get(key: string): string | null {
    try {
      return globalThis.localStorage?.getItem(key) ?? null;
    } catch {
      return null;
    }
  },
  set(key: string, value: string): void {
    try {
      globalThis.localStorage?.setItem(key, value);
    } catch {
      // Full or unavailable: the in-memory state still works for this page.
    }
  },
  keys(): string[] {
    try {
      const storage = globalThis.localStorage;
      if (!storage) return [];
      return Array.from({ length: storage.length }, (_, i) => storage.key(i)).filter((k): k is string => k !== null);
    } catch {
      return [];
    }
  },
  remove(key: string): void {
    try {
      globalThis.localStorage?.removeItem(key);
    } catch {
      // Nothing to do.
    }
  },
};
