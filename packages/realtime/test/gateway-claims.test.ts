import type { IngestResult } from '@svc/protocol';
import { MemoryViewerClaims, type Interaction, type OverlayRecord, type ViewerClaims } from '@svc/storage';
import { afterEach, describe, expect, it } from 'vitest';
import { pollRecord, startGateway, TENANT, type Harness } from './gateway-harness';

const CONTEST: OverlayRecord = { ...pollRecord('contest-1'), type: 'contest', content: { type: 'contest', title: 'Win' } };
const ACCEPTED: IngestResult = { accepted: 1, duplicates: 0, rejected: [] };

/** Claims whose backend cannot answer (NATS gone). */
const unreachable: ViewerClaims = {
  claimVote: () => Promise.reject(new Error('timed out')),
  claimUser: () => Promise.reject(new Error('timed out')),
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
    await claims.claimVote({ tenantSeq: TENANT.seq, pollId: 'poll-1', sessionId: 'svc_elsewhere', userId: 'user-1', attempt: 'attempt-1' });
    await claims.claimEntry({ tenantSeq: TENANT.seq, contestId: 'contest-1', viewer: 'user-1', attempt: 'attempt-1' });
    h = await startGateway({}, [pollRecord('poll-1'), CONTEST], [], undefined, { claims });
    const viewer = await h.join('svc_here', 'b', 'user-1');
    expect(await viewer.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 })).toMatchObject({ type: 'error', code: 'already_voted' });
    expect(await viewer.request({ type: 'contest.enter', contestId: 'contest-1' })).toMatchObject({ type: 'error', code: 'already_entered' });
    expect(h.ingested).toEqual([]);
    // Nothing was counted here either: the session's own claims were left free.
    expect(await claims.claimVote({ tenantSeq: TENANT.seq, pollId: 'poll-1', sessionId: 'svc_here', userId: null, attempt: 'attempt-1' })).toBe(true);
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
    expect(await claims.claimVote({ tenantSeq: TENANT.seq, pollId: 'poll-1', sessionId: 'svc_other_device', userId: 'user-1', attempt: 'attempt-1' })).toBe(false);
    expect(await claims.claimEntry({ tenantSeq: TENANT.seq, contestId: 'contest-1', viewer: 'user-1', attempt: 'attempt-1' })).toBe(false);
  });

  it('reads the stored votes and entries again after a room opened: those stored through another node meanwhile show in welcomes and results', async () => {
    const stored: Interaction[] = [];
    h = await startGateway({ throttleMs: 1_000, rereadStoredAfterMs: [5_000] }, [pollRecord('poll-1'), CONTEST], stored, undefined, { claims: new MemoryViewerClaims() });
    const watcher = await h.join('svc_watcher');
    // Stored through another node while the room opened here: the bus told it before the room was there.
    const at = h.clock.now();
    const interaction = { sessionId: 'svc_elsewhere', userId: 'user-1', viewer: 'user-1', timestampMs: at, receivedAtMs: at };
    stored.push(
      { ...interaction, kind: 'vote', overlayId: 'poll-1', eventId: 'e-vote', optionIndex: 1, optionSelected: 'No' },
      { ...interaction, kind: 'entry', overlayId: 'contest-1', eventId: 'e-entry', optionIndex: null, optionSelected: null },
    );
    h.timers.advance(4_000);
    expect((await h.join('svc_early', 'b', 'user-1')).ofType('welcome')[0]).toMatchObject({ viewer: { votes: {}, contests: [] } });
    h.timers.advance(1_000);
    expect(await watcher.next((m) => m.type === 'poll.results')).toMatchObject({ counts: [0, 1], total: 1 });
    expect((await h.join('svc_later', 'b', 'user-1')).ofType('welcome')[0]).toMatchObject({ viewer: { votes: { 'poll-1': 1 }, contests: ['contest-1'] } });
    // Read again, nothing counts twice.
    h.timers.advance(10_000);
    await watcher.settle();
    expect(watcher.ofType('poll.results').map((m) => m.total)).toEqual([1]);
  });
  it('reads the stored votes and entries again 30 s, 2 min and 10 min after a room opened while a lagging writer still brings some', async () => {
    const stored: Interaction[] = [];
    let reads = 0;
    const interactions = { listInteractions: async () => (reads++, [...stored]) };
    h = await startGateway({ throttleMs: 1_000 }, [pollRecord('poll-1'), CONTEST], [], undefined, { claims: new MemoryViewerClaims(), interactions });
    const watcher = await h.join('svc_watcher');
    expect(reads).toBe(1);
    const at = h.clock.now();
    const interaction = { userId: null, timestampMs: at, receivedAtMs: at };
    const advance = async (ms: number) => {
      h.timers.advance(ms);
      await watcher.settle();
    };
    await advance(5_000);
    expect(reads).toBe(2);
    // The writer lags: a vote stored through another node before the room opened becomes readable after 20 s.
    stored.push({ ...interaction, sessionId: 'svc_a', viewer: 'svc_a', kind: 'vote', overlayId: 'poll-1', eventId: 'e-vote', optionIndex: 1, optionSelected: 'No' });
    await advance(25_000);
    expect(reads).toBe(3);
    h.timers.advance(1_000);
    expect(await watcher.next((m) => m.type === 'poll.results')).toMatchObject({ counts: [0, 1], total: 1 });
    // Still lagging: an entry readable after a minute is read at 2 min.
    stored.push({ ...interaction, sessionId: 'svc_b', viewer: 'svc_b', kind: 'entry', overlayId: 'contest-1', eventId: 'e-entry', optionIndex: null, optionSelected: null });
    await advance(89_000);
    expect(reads).toBe(4);
    expect((await h.join('svc_b')).ofType('welcome')[0]).toMatchObject({ viewer: { contests: ['contest-1'] } });
    // The last read at 10 min finds nothing new; no read follows, however long the room stays open.
    await advance(480_000);
    expect(reads).toBe(5);
    await advance(3_600_000);
    expect(reads).toBe(5);
  });

  it('stops reading the stored votes and entries again once a read after the first found nothing new', async () => {
    let reads = 0;
    const interactions = { listInteractions: async () => (reads++, []) };
    h = await startGateway({ throttleMs: 1_000 }, [pollRecord('poll-1'), CONTEST], [], undefined, { claims: new MemoryViewerClaims(), interactions });
    const watcher = await h.join('svc_watcher');
    for (const [afterMs, total] of [[5_000, 2], [25_000, 3], [3_600_000, 3]] as const) {
      h.timers.advance(afterMs);
      await watcher.settle();
      expect(reads).toBe(total);
    }
  });
});
