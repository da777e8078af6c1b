import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PollTally } from '../src/poll-tally';
import { countedVotes, pollVoteProblem, type CastVote, type PollDefinition } from '../src/poll-votes';

// Few sessions, users and instants, so that votes share them often and times tie.
const vote = fc.record({
  sessionId: fc.constantFrom('s1', 's2', 's3', 's4'),
  userId: fc.constantFrom(null, 'u1', 'u2', 'u3'),
  timestampMs: fc.integer({ min: 0, max: 5 }),
  optionIndex: fc.integer({ min: 0, max: 2 }),
});
const votes = fc.array(vote, { maxLength: 14 }).map((list) => list.map((v, i): CastVote => ({ ...v, eventId: `e${String(i).padStart(2, '0')}` })));

function countsOf(list: CastVote[]): number[] {
  const counts = [0, 0, 0];
  for (const v of countedVotes(list)) counts[v.optionIndex]!++;
  return counts;
}

describe('poll votes (properties)', () => {
  it('counts the same, vote after vote in any order of arrival, as the rule over the whole set', () => {
    fc.assert(
      fc.property(votes.chain((list) => fc.tuple(fc.constant(list), fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length }))), ([list, arrival]) => {
        const tally = new PollTally(3);
        for (const v of arrival) tally.add(v);
        expect(tally.counts).toEqual(countsOf(list));
        expect(tally.total).toBe(countedVotes(list).length);
      }),
    );
  });

  it('gives back the counts of the remaining votes when votes are taken back', () => {
    fc.assert(
      fc.property(votes, fc.array(fc.nat(), { maxLength: 6 }), (list, picks) => {
        const tally = new PollTally(3);
        for (const v of list) tally.add(v);
        const removed = new Set(list.length ? picks.map((p) => list[p % list.length]!.eventId) : []);
        for (const id of removed) tally.remove(id);
        expect(tally.counts).toEqual(countsOf(list.filter((v) => !removed.has(v.eventId))));
      }),
    );
  });

  it('counts one vote per session and per userId: a session that takes new userIds, and a userId on new sessions, vote once', () => {
    const at = (eventId: string, sessionId: string, userId: string | null, timestampMs: number, optionIndex: number): CastVote => ({ eventId, sessionId, userId, timestampMs, optionIndex });
    const counted = countedVotes([at('a', 's1', null, 1, 0), at('b', 's1', 'u1', 2, 1), at('c', 's1', 'u2', 3, 2), at('d', 's2', 'u2', 4, 1), at('e', 's3', 'u3', 5, 2)]);
    expect(counted.map((v) => v.eventId)).toEqual(['a', 'e']);
  });
});

describe('pollVoteProblem', () => {
  const poll: PollDefinition = { id: 'poll_1', broadcastId: 'b1', question: 'Who wins?', options: ['Team A', 'Team B', 'Draw'], createdAtMs: 1_000 };
  const claim = { broadcastId: 'b1', optionIndex: 1, optionSelected: 'Team B', receivedAtMs: 2_000 };

  it("accepts the poll's own option and label, and names what is wrong otherwise", () => {
    expect(pollVoteProblem(poll, claim)).toBeNull();
    expect(pollVoteProblem(poll, { ...claim, optionIndex: 99 })?.path).toBe('/data/optionIndex');
    expect(pollVoteProblem(poll, { ...claim, optionIndex: 3 })?.path).toBe('/data/optionIndex');
    expect(pollVoteProblem(poll, { ...claim, optionIndex: '1' })?.path).toBe('/data/optionIndex');
    expect(pollVoteProblem(poll, { ...claim, optionSelected: 'option 99' })?.path).toBe('/data/optionSelected');
    expect(pollVoteProblem(poll, { ...claim, broadcastId: 'b2' })?.path).toBe('/broadcastId');
    // Sent before the poll existed: about a poll the service did not know then.
    expect(pollVoteProblem(poll, { ...claim, receivedAtMs: 999 })?.path).toBe('/data/pollId');
  });

  it('refuses a vote received at or after the poll closes, and takes one just before', () => {
    const closing: PollDefinition = { ...poll, closesAtMs: 5_000 };
    expect(pollVoteProblem(closing, { ...claim, receivedAtMs: 4_999 })).toBeNull();
    expect(pollVoteProblem(closing, { ...claim, receivedAtMs: 5_000 })).toEqual({ path: '/data/pollId', message: 'was sent after poll "poll_1" closed' });
    expect(pollVoteProblem(closing, { ...claim, receivedAtMs: 9_000 })?.path).toBe('/data/pollId');
    // A poll without a closing time never closes.
    expect(pollVoteProblem(poll, { ...claim, receivedAtMs: Number.MAX_SAFE_INTEGER })).toBeNull();
  });
});
