/**
 * What counts as a vote: the one rule that live results, rooms rebuilt from storage and the
 * dashboard apply alike (docs/analytics.md, "Poll votes").
 *
 * 1. **Valid.** A `poll.voted` counts only for a poll the service knows (a poll overlay of the
 *    tenant), sent in the poll's broadcast, received after the poll was created, naming an
 *    option the poll has (`optionIndex`) with that option's own label (`optionSelected`), and,
 *    when the poll has a `closesAt`, received before that time.
 *    Ingest quarantines a vote on a known poll that breaks this (`poll_vote_invalid`); votes on
 *    polls the service does not know are stored but never counted.
 * 2. **One per viewer.** Among a poll's valid votes, a vote counts when no other vote of the
 *    same session, and none of the same `userId` (when it has one), comes before it (by time,
 *    then event id). So a session that votes and later takes a `userId` cannot vote again
 *    under it, and a viewer signed in on two devices votes once. The rule depends only on the
 *    set of votes, not on the order they arrive in, so every reader gets the same answer.
 */

/** A poll as the service defines it (a poll overlay). */
export interface PollDefinition {
  id: string;
  broadcastId: string;
  question: string;
  options: readonly string[];
  createdAtMs: number;
  /** From the poll's `closesAt`: a vote received then or later is refused. None: the poll never closes. */
  closesAtMs?: number;
}

/** The polls the service knows, looked up in memory (ingest checks every vote against it). */
export interface KnownPolls {
  find(tenantSeq: number, pollId: string): PollDefinition | undefined;
}

/** The fields of a `poll.voted` event the rule reads. */
export interface VoteClaim {
  broadcastId: string;
  optionIndex: unknown;
  optionSelected: unknown;
  receivedAtMs: number;
}

/** Why a vote does not belong to the poll it names (`null`: it does). */
export function pollVoteProblem(poll: PollDefinition, vote: VoteClaim): { path: string; message: string } | null {
  if (vote.broadcastId !== poll.broadcastId) return { path: '/broadcastId', message: `poll "${poll.id}" belongs to another broadcast` };
  const index = vote.optionIndex;
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= poll.options.length) {
    return { path: '/data/optionIndex', message: `must be an option of poll "${poll.id}": an integer from 0 to ${poll.options.length - 1}` };
  }
  if (vote.optionSelected !== poll.options[index]) return { path: '/data/optionSelected', message: `must be the label of option ${index} of poll "${poll.id}"` };
  if (vote.receivedAtMs < poll.createdAtMs) return { path: '/data/pollId', message: `was sent before poll "${poll.id}" existed` };
  if (poll.closesAtMs !== undefined && vote.receivedAtMs >= poll.closesAtMs) return { path: '/data/pollId', message: `was sent after poll "${poll.id}" closed` };
  return null;
}

/** A valid vote on one poll. */
export interface CastVote {
  eventId: string;
  sessionId: string;
  userId: string | null;
  timestampMs: number;
  optionIndex: number;
}

/** Whether `a` comes before `b` (time, then event id). */
export function voteBefore(a: CastVote, b: CastVote): boolean {
  return a.timestampMs < b.timestampMs || (a.timestampMs === b.timestampMs && a.eventId < b.eventId);
}

/** The votes that count among the valid votes of one poll (rule 2), in the order given. */
export function countedVotes(votes: readonly CastVote[]): CastVote[] {
  const firstBy = (key: (v: CastVote) => string | null) => {
    const first = new Map<string, CastVote>();
    for (const vote of votes) {
      const k = key(vote);
      if (k === null) continue;
      const current = first.get(k);
      if (!current || voteBefore(vote, current)) first.set(k, vote);
    }
    return first;
  };
  const bySession = firstBy((v) => v.sessionId);
  const byUser = firstBy((v) => v.userId);
  return votes.filter((v) => bySession.get(v.sessionId) === v && (v.userId === null || byUser.get(v.userId) === v));
}

/** Whether a poll or contest with this `closesAt` takes no more votes or entries at `nowMs` (the rule of `pollVoteProblem`). */
export function isClosed(closesAt: string | undefined, nowMs: number): boolean {
  return closesAt !== undefined && nowMs >= Date.parse(closesAt);
}
