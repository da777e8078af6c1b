import type { IngestResult } from '@svc/protocol';
import { MemoryViewerClaims, type OverlayRecord, type ViewerClaims } from '@svc/storage';
import { afterEach, describe, expect, it } from 'vitest';
import { pollRecord, startGateway, TENANT, type Harness } from './gateway-harness';

const CONTEST: OverlayRecord = { ...pollRecord('contest-1'), type: 'contest', content: { type: 'contest', title: 'Win' } };
const ACCEPTED: IngestResult = { accepted: 1, duplicates: 0, rejected: [] };

/** Claims whose backend cannot answer (NATS gone). */
const unreachable: ViewerClaims = {
  claimVote: () => Promise.reject(new Error('timed out')),
  releaseVote: () => Promise.reject(new Error('timed out')),
  claimEntry: () => Promise.reject(new Error('timed out')),
  releaseEntry: () => Promise.reject(new Error('timed out')),
};

describe('gateway with claims of votes and entries', () => {
  let h: Harness;
  afterEach(async () => {
    await h.close();
  });

  it('refuses a vote and an entry another node claimed for the viewer, and stores nothing', async () => {
    const claims = new MemoryViewerClaims();
    // The same userId voted and entered through another node, from another session.
    await claims.claimVote({ tenantSeq: TENANT.seq, pollId: 'poll-1', sessionId: 'svc_elsewhere', userId: 'user-1' });
    await claims.claimEntry({ tenantSeq: TENANT.seq, contestId: 'contest-1', viewer: 'user-1' });
    h = await startGateway({}, [pollRecord('poll-1'), CONTEST], [], undefined, { claims });
    const viewer = await h.join('svc_here', 'b', 'user-1');
    expect(await viewer.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 })).toMatchObject({ type: 'error', code: 'already_voted' });
    expect(await viewer.request({ type: 'contest.enter', contestId: 'contest-1' })).toMatchObject({ type: 'error', code: 'already_entered' });
    expect(h.ingested).toEqual([]);
    // Nothing was counted here either: the session's own claims were left free.
    expect(await claims.claimVote({ tenantSeq: TENANT.seq, pollId: 'poll-1', sessionId: 'svc_here', userId: null })).toBe(true);
  });

  it('answers storage_unavailable and counts nothing when the claims cannot answer', async () => {
    h = await startGateway({ throttleMs: 1_000 }, [pollRecord('poll-1'), CONTEST], [], undefined, { claims: unreachable });
    const watcher = await h.join('svc_watcher');
    const viewer = await h.join('svc_voter', 'b', 'user-1');
    expect(await viewer.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 })).toMatchObject({ type: 'error', code: 'storage_unavailable' });
    expect(await viewer.request({ type: 'contest.enter', contestId: 'contest-1' })).toMatchObject({ type: 'error', code: 'storage_unavailable' });
    h.timers.advance(2_000);
    await watcher.settle();
    expect(h.ingested).toEqual([]);
    expect(watcher.ofType('poll.results')).toEqual([]);
    const again = await h.join('svc_voter_again', 'b', 'user-1');
    expect(again.ofType('welcome')[0]).toMatchObject({ viewer: { votes: {}, contests: [] } });
  });

  it('gives back the claim of a vote or entry whose event was not stored, and keeps the claim of one stored', async () => {
    const claims = new MemoryViewerClaims();
    let refuse = true;
    h = await startGateway({}, [pollRecord('poll-1'), CONTEST], [], undefined, {
      claims,
      events: {
        ingest: async () => (refuse ? { accepted: 0, duplicates: 0, rejected: [{ index: 0, code: 'invalid_event', detail: 'No.' }] } : ACCEPTED),
        campaignOf: async () => 1,
      },
    });
    const viewer = await h.join('svc_voter', 'b', 'user-1');
    expect(await viewer.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 })).toMatchObject({ type: 'error', code: 'invalid_event' });
    expect(await viewer.request({ type: 'contest.enter', contestId: 'contest-1' })).toMatchObject({ type: 'error', code: 'invalid_event' });
    refuse = false;
    expect(await viewer.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 })).toMatchObject({ type: 'ack' });
    expect(await viewer.request({ type: 'contest.enter', contestId: 'contest-1' })).toMatchObject({ type: 'ack' });
    // The stored vote and entry hold their claims: another node would refuse the viewer.
    expect(await claims.claimVote({ tenantSeq: TENANT.seq, pollId: 'poll-1', sessionId: 'svc_other_device', userId: 'user-1' })).toBe(false);
    expect(await claims.claimEntry({ tenantSeq: TENANT.seq, contestId: 'contest-1', viewer: 'user-1' })).toBe(false);
  });
});
