import { describe, expect, it } from 'vitest';
import type { OpenSession, SessionDirectory } from '../src';

export interface SessionDirectoryBackend {
  directory: SessionDirectory;
  /** The directory's max age, ms. */
  maxAgeMs: number;
  /** Lets `ms` pass for the directory (a manual clock, or real time). */
  pass(ms: number): Promise<void>;
  close(): Promise<void>;
}

const ON_A: OpenSession = { node: 'node-a', broadcastId: 'final', joinedAt: 1_700_000_000_123 };
const ON_B: OpenSession = { ...ON_A, node: 'node-b' };

/** What every session directory does, whatever keeps it. */
export function sessionDirectoryContract(name: string, open: () => Promise<SessionDirectoryBackend>): void {
  describe(`${name} session directory contract`, () => {
    const withBackend = (test: (backend: SessionDirectoryBackend) => Promise<void>) => async () => {
      const backend = await open();
      try {
        await test(backend);
      } finally {
        await backend.close();
      }
    };

    it('finds a recorded session by tenant and session id, and nothing else', withBackend(async ({ directory }) => {
      await directory.record(1, 'svc_s1', ON_A);
      expect((await directory.find(1, 'svc_s1'))?.session).toEqual(ON_A);
      expect(await directory.find(2, 'svc_s1')).toBeNull();
      expect(await directory.find(1, 'svc_s2')).toBeNull();
    }));

    it('keeps the latest record of a session: a session that moved names its new node', withBackend(async ({ directory }) => {
      await directory.record(1, 'svc_s1', ON_A);
      await directory.record(1, 'svc_s1', ON_B);
      expect((await directory.find(1, 'svc_s1'))?.session).toEqual(ON_B);
    }));

    it('removes a record only while it still is the one removed, and says what became of it', withBackend(async ({ directory }) => {
      await directory.record(1, 'svc_s1', ON_A);
      await directory.record(1, 'svc_s1', ON_B);
      expect(await directory.remove(1, 'svc_s1', ON_A)).toBe('moved');
      expect((await directory.find(1, 'svc_s1'))?.session).toEqual(ON_B);
      // A newer session of the id (another start): the removed one is gone.
      expect(await directory.remove(1, 'svc_s1', { ...ON_B, joinedAt: ON_B.joinedAt + 1 })).toBe('gone');
      expect((await directory.find(1, 'svc_s1'))?.session).toEqual(ON_B);
      expect(await directory.remove(1, 'svc_s1', ON_B)).toBe('removed');
      expect(await directory.find(1, 'svc_s1')).toBeNull();
      // Removing what is not there is no failure; a session recorded again is found again.
      expect(await directory.remove(1, 'svc_s1', ON_B)).toBe('gone');
      await directory.record(1, 'svc_s1', ON_A);
      expect((await directory.find(1, 'svc_s1'))?.session).toEqual(ON_A);
    }));

    it('moves a session only from the revision found: of two nodes, one wins', withBackend(async ({ directory }) => {
      const recorded = await directory.record(1, 'svc_s1', ON_A);
      const found = await directory.find(1, 'svc_s1');
      expect(found).toEqual({ session: ON_A, revision: recorded });
      const moved = await directory.move(1, 'svc_s1', ON_B, recorded);
      expect(moved).toBeGreaterThan(recorded);
      expect(await directory.find(1, 'svc_s1')).toEqual({ session: ON_B, revision: moved });
      // A second node moving from the same revision loses, and so does a node whose record went.
      expect(await directory.move(1, 'svc_s1', { ...ON_A, node: 'node-c' }, recorded)).toBeNull();
      expect(await directory.remove(1, 'svc_s1', ON_B)).toBe('removed');
      expect(await directory.move(1, 'svc_s1', ON_A, moved!)).toBeNull();
      expect(await directory.find(1, 'svc_s1')).toBeNull();
    }));

    it('removes the revision a node wrote without finding it first, and leaves a later one', withBackend(async ({ directory }) => {
      const recorded = await directory.record(1, 'svc_s1', ON_A);
      expect(await directory.remove(1, 'svc_s1', ON_A, recorded)).toBe('removed');
      expect(await directory.find(1, 'svc_s1')).toBeNull();
      const again = await directory.record(1, 'svc_s1', ON_A);
      const moved = await directory.move(1, 'svc_s1', ON_B, again);
      expect(await directory.remove(1, 'svc_s1', ON_A, again)).toBe('moved');
      expect(await directory.find(1, 'svc_s1')).toEqual({ session: ON_B, revision: moved });
    }));

    it('leaves a session that moved to its new node when the old node removes it', withBackend(async ({ directory }) => {
      const recorded = await directory.record(1, 'svc_s1', ON_A);
      await directory.move(1, 'svc_s1', ON_B, recorded);
      expect(await directory.remove(1, 'svc_s1', ON_A)).toBe('moved');
      expect((await directory.find(1, 'svc_s1'))?.session).toEqual(ON_B);
    }));

    it('forgets a record after its max age', withBackend(async ({ directory, maxAgeMs, pass }) => {
      await directory.record(1, 'svc_old', ON_A);
      await pass(maxAgeMs / 2);
      await directory.record(1, 'svc_young', ON_B);
      expect((await directory.find(1, 'svc_old'))?.session).toEqual(ON_A);
      await pass(maxAgeMs / 2 + 300);
      expect(await directory.find(1, 'svc_old')).toBeNull();
      expect((await directory.find(1, 'svc_young'))?.session).toEqual(ON_B);
    }));

    it('records and finds many sessions at once', withBackend(async ({ directory }) => {
      const ids = Array.from({ length: 50 }, (_, i) => `svc_many${i}`);
      await Promise.all(ids.map((id, i) => directory.record(3, id, { ...ON_A, joinedAt: i })));
      const found = await Promise.all(ids.map((id) => directory.find(3, id)));
      expect(found.map((record) => record?.session.joinedAt)).toEqual(ids.map((_, i) => i));
    }));
  });
}
