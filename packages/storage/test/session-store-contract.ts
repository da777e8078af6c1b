import { describe, expect, it } from 'vitest';
import { hashSessionSecret, type SessionRecord, type SessionStore } from '../src';

/** What the SessionStore contract needs of a backend: `Storage` has it, and so has a metadata-only one. */
export interface SessionBackend {
  sessions: SessionStore;
  close(): Promise<void>;
}

const HOUR = 60 * 60 * 1000;
const T0 = Date.UTC(2026, 10, 25, 9, 30, 0, 123);

const session = (secret: string, overrides: Partial<SessionRecord> = {}): SessionRecord => ({
  idHash: hashSessionSecret(secret),
  tenantSeq: 1,
  tokenHash: 'a'.repeat(64),
  createdAt: T0,
  expiresAt: T0 + 12 * HOUR + 7,
  ...overrides,
});

/** Behaviour every SessionStore must show; `open` gives an empty database each time. */
export function sessionStoreContract(name: string, open: () => Promise<SessionBackend>): void {
  describe(`${name} session store contract`, () => {
    it('finds a session by the hash of its secret, times to the millisecond, and nothing else', async () => {
      const store = await open();
      const record = session('secret-1');
      await store.sessions.createSession(record);
      expect(await store.sessions.findSession(record.idHash)).toEqual(record);
      expect(await store.sessions.findSession(hashSessionSecret('secret-2'))).toBeNull();
      // The secret is no key: only its hash finds the session.
      expect(await store.sessions.findSession('secret-1')).toBeNull();
      await store.close();
    });

    it('refuses a second session with the same id hash and keeps the first', async () => {
      const store = await open();
      const record = session('twice');
      await store.sessions.createSession(record);
      await expect(store.sessions.createSession({ ...record, tenantSeq: 2 })).rejects.toThrow();
      expect(await store.sessions.findSession(record.idHash)).toEqual(record);
      await store.close();
    });

    it('ends one session once', async () => {
      const store = await open();
      const [kept, ended] = [session('kept'), session('ended')];
      await store.sessions.createSession(kept);
      await store.sessions.createSession(ended);
      expect(await store.sessions.deleteSession(ended.idHash)).toBe(true);
      expect(await store.sessions.deleteSession(ended.idHash)).toBe(false);
      expect(await store.sessions.findSession(ended.idHash)).toBeNull();
      expect(await store.sessions.findSession(kept.idHash)).toEqual(kept);
      await store.close();
    });

    it("ends a tenant's sessions and an admin token's sessions, and no others", async () => {
      const store = await open();
      const tokenA = 'a'.repeat(64);
      const tokenB = 'b'.repeat(64);
      const tokenC = 'c'.repeat(64);
      const records = [
        session('a1', { tenantSeq: 1, tokenHash: tokenA }),
        session('a2', { tenantSeq: 1, tokenHash: tokenA }),
        session('b1', { tenantSeq: 1, tokenHash: tokenB }),
        session('c1', { tenantSeq: 2, tokenHash: tokenC }),
        session('c2', { tenantSeq: 2, tokenHash: tokenC }),
      ];
      for (const record of records) await store.sessions.createSession(record);
      const alive = async () => (await Promise.all(records.map((r) => store.sessions.findSession(r.idHash)))).map((r) => r !== null);

      expect(await store.sessions.deleteTokenSessions(tokenA)).toBe(2);
      expect(await alive()).toEqual([false, false, true, true, true]);
      expect(await store.sessions.deleteTokenSessions(tokenA)).toBe(0);
      expect(await store.sessions.deleteTenantSessions(2)).toBe(2);
      expect(await alive()).toEqual([false, false, true, false, false]);
      expect(await store.sessions.deleteTenantSessions(2)).toBe(0);
      await store.close();
    });

    it('keeps an expired session findable until purged, and purges only those expired at or before the moment', async () => {
      const store = await open();
      const expired = session('expired', { expiresAt: T0 });
      const expiring = session('expiring', { expiresAt: T0 + 1 });
      const live = session('live', { expiresAt: T0 + HOUR });
      for (const record of [expired, expiring, live]) await store.sessions.createSession(record);
      // Whether a session has expired is the caller's judgement, with its clock.
      expect(await store.sessions.findSession(expired.idHash)).toEqual(expired);
      expect(await store.sessions.purgeExpiredSessions(T0)).toBe(1);
      expect(await store.sessions.findSession(expired.idHash)).toBeNull();
      expect(await store.sessions.findSession(expiring.idHash)).toEqual(expiring);
      expect(await store.sessions.purgeExpiredSessions(T0 + 1)).toBe(1);
      expect(await store.sessions.purgeExpiredSessions(T0 + 1)).toBe(0);
      expect(await store.sessions.findSession(live.idHash)).toEqual(live);
      await store.close();
    });

    it("lists a tenant's sessions, expired ones too, oldest first, and no other tenant's", async () => {
      const store = await open();
      const late = session('late', { createdAt: T0 + 5, expiresAt: T0 + 6 });
      const early = session('early', { createdAt: T0 - 5 });
      const other = session('other', { tenantSeq: 2 });
      for (const record of [late, other, early]) await store.sessions.createSession(record);
      expect(await store.sessions.listSessions(1)).toEqual([early, late]);
      expect(await store.sessions.listSessions(2)).toEqual([other]);
      expect(await store.sessions.listSessions(3)).toEqual([]);
      await store.close();
    });

    it('opens, finds and ends many sessions at the same moment', async () => {
      const store = await open();
      const records = Array.from({ length: 40 }, (_, i) => session(`many-${i}`, { tenantSeq: 1 + (i % 3) }));
      await Promise.all(records.map((r) => store.sessions.createSession(r)));
      expect(await Promise.all(records.map((r) => store.sessions.findSession(r.idHash)))).toEqual(records);
      const ended = await Promise.all(records.flatMap((r) => [store.sessions.deleteSession(r.idHash), store.sessions.deleteSession(r.idHash)]));
      // Each session is ended by exactly one of the two calls.
      expect(ended.filter(Boolean)).toHaveLength(records.length);
      await store.close();
    });
  });
}
