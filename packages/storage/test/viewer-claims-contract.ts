import { describe, expect, it } from 'vitest';
import type { PollVoter, ViewerClaims } from '../src';

/** Two handles on one backend's claims (two nodes; one process's store twice where there are no nodes). */
export interface ClaimsBackend {
  nodeA: ViewerClaims;
  nodeB: ViewerClaims;
  close(): Promise<void>;
}

let attempts = 0;
/** A vote of a new attempt each time. */
const voter = (overrides: Partial<PollVoter> = {}): PollVoter => ({ tenantSeq: 1, pollId: 'ov_poll', sessionId: 'svc_s1', userId: null, attempt: `attempt-${++attempts}`, ...overrides });

/** Behaviour every `ViewerClaims` must show; `open` gives empty claims each time. */
export function viewerClaimsContract(name: string, open: () => Promise<ClaimsBackend>): void {
  describe(`${name} viewer claims contract`, () => {
    it('gives a session one vote per poll, on any node', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        expect(await nodeA.claimVote(voter())).toBe(true);
        expect(await nodeA.claimVote(voter())).toBe(false);
        expect(await nodeB.claimVote(voter())).toBe(false);
        // Another poll, another session, another tenant: claims of their own.
        expect(await nodeB.claimVote(voter({ pollId: 'ov_other' }))).toBe(true);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_s2' }))).toBe(true);
        expect(await nodeB.claimVote(voter({ tenantSeq: 2 }))).toBe(true);
      } finally {
        await close();
      }
    });

    it('gives a userId one vote per poll whatever session casts it, and a refused claim leaves nothing behind', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        expect(await nodeA.claimVote(voter({ sessionId: 'svc_phone', userId: 'user-1' }))).toBe(true);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_laptop', userId: 'user-1' }))).toBe(false);
        // The laptop's session was not left claimed by the refused vote: it may vote as another user.
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_laptop', userId: 'user-2' }))).toBe(true);
        // A session that voted with a userId cannot vote again without it, nor the other way round.
        expect(await nodeA.claimVote(voter({ sessionId: 'svc_phone', userId: null }))).toBe(false);
        expect(await nodeA.claimVote(voter({ sessionId: 'svc_anon' }))).toBe(true);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_anon', userId: 'user-3' }))).toBe(false);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_tablet', userId: 'user-3' }))).toBe(true);
      } finally {
        await close();
      }
    });

    it('releases a vote that could not be stored: session and userId may vote again', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        const phone = voter({ sessionId: 'svc_phone', userId: 'user-1' });
        expect(await nodeA.claimVote(phone)).toBe(true);
        await nodeA.releaseVote(phone);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_laptop', userId: 'user-1' }))).toBe(true);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_phone' }))).toBe(true);
        // Released twice over: nothing else changes.
        await nodeA.releaseVote(phone);
        expect(await nodeA.claimVote(voter({ sessionId: 'svc_laptop', userId: 'user-1' }))).toBe(false);
      } finally {
        await close();
      }
    });

    it('claims the vote of a userId a session took after voting: that user may not vote again, on any node', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        expect(await nodeA.claimVote(voter({ sessionId: 'svc_anon' }))).toBe(true);
        expect(await nodeA.claimUser({ ...voter({ sessionId: 'svc_anon' }), userId: 'user-1' })).toBe(true);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_laptop', userId: 'user-1' }))).toBe(false);
        // A user who had voted already keeps that claim.
        expect(await nodeB.claimUser({ ...voter({ sessionId: 'svc_other' }), userId: 'user-1' })).toBe(false);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_laptop', userId: 'user-2' }))).toBe(true);
      } finally {
        await close();
      }
    });

    it('gives back only the claim of the attempt that took it', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        const phone = voter({ sessionId: 'svc_phone', userId: 'user-1' });
        const entrant = { tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-1', attempt: 'attempt-won' };
        expect(await nodeA.claimVote(phone)).toBe(true);
        expect(await nodeA.claimEntry(entrant)).toBe(true);
        // A refused attempt that gives back (as after a failed store) leaves the winner's claims.
        await nodeB.releaseVote({ ...phone, attempt: 'attempt-refused' });
        await nodeB.releaseEntry({ ...entrant, attempt: 'attempt-refused' });
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_phone' }))).toBe(false);
        expect(await nodeB.claimVote(voter({ sessionId: 'svc_laptop', userId: 'user-1' }))).toBe(false);
        expect(await nodeB.claimEntry({ ...entrant, attempt: 'attempt-later' })).toBe(false);
      } finally {
        await close();
      }
    });

    it('gives a viewer one entry per contest, released when it could not be stored', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        const entrant = { tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-1', attempt: 'attempt-entry' };
        expect(await nodeA.claimEntry(entrant)).toBe(true);
        expect(await nodeB.claimEntry(entrant)).toBe(false);
        expect(await nodeB.claimEntry({ ...entrant, contestId: 'ov_other' })).toBe(true);
        expect(await nodeB.claimEntry({ ...entrant, viewer: 'user-2' })).toBe(true);
        expect(await nodeB.claimEntry({ ...entrant, tenantSeq: 2 })).toBe(true);
        // An entry and a vote with the same ids are different claims.
        expect(await nodeB.claimVote(voter({ pollId: 'ov_contest', sessionId: 'user-1', userId: 'user-1' }))).toBe(true);
        await nodeA.releaseEntry(entrant);
        expect(await nodeB.claimEntry(entrant)).toBe(true);
      } finally {
        await close();
      }
    });

    it('lets exactly one of 20 concurrent votes of one userId win, across two nodes', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        const claims = Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? nodeA : nodeB).claimVote(voter({ sessionId: `svc_device_${i % 4}`, userId: 'user-1' })),
        );
        const won = (await Promise.all(claims)).filter(Boolean);
        expect(won).toHaveLength(1);
        // Whichever session won, no other device's session was left claimed.
        const sessionsLeft = await Promise.all([0, 1, 2, 3].map((i) => nodeA.claimVote(voter({ sessionId: `svc_device_${i}` }))));
        expect(sessionsLeft.filter((claimed) => !claimed)).toHaveLength(1);
      } finally {
        await close();
      }
    });

    it('lets exactly one of 20 concurrent claims win again after a release', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        const entrant = { tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-1', attempt: 'attempt-entry' };
        const phone = voter({ sessionId: 'svc_phone', userId: 'user-1' });
        expect(await nodeA.claimEntry(entrant)).toBe(true);
        expect(await nodeA.claimVote(phone)).toBe(true);
        await nodeA.releaseEntry(entrant);
        await nodeA.releaseVote(phone);
        const entries = Array.from({ length: 20 }, (_, i) => (i % 2 ? nodeA : nodeB).claimEntry(entrant));
        const votes = Array.from({ length: 20 }, (_, i) => (i % 2 ? nodeA : nodeB).claimVote(voter({ sessionId: `svc_device_${i % 4}`, userId: 'user-1' })));
        expect((await Promise.all(entries)).filter(Boolean)).toHaveLength(1);
        expect((await Promise.all(votes)).filter(Boolean)).toHaveLength(1);
      } finally {
        await close();
      }
    });

    it('lets exactly one of 20 concurrent entries of one viewer win, across two nodes', async () => {
      const { nodeA, nodeB, close } = await open();
      try {
        const entrant = { tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-1', attempt: 'attempt-entry' };
        const claims = Array.from({ length: 20 }, (_, i) => (i % 2 ? nodeA : nodeB).claimEntry(entrant));
        expect((await Promise.all(claims)).filter(Boolean)).toHaveLength(1);
      } finally {
        await close();
      }
    });
  });
}
