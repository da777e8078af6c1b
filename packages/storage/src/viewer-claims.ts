import { createHash } from 'node:crypto';

/** A viewer's vote in one poll: one per session, and one per userId when the session has one. */
export interface PollVoter {
  tenantSeq: number;
  pollId: string;
  sessionId: string;
  userId: string | null;
  /**
   * The id of this attempt to vote (random, minted by the caller): the claim carries it, and a
   * release gives back only the claim this attempt took.
   */
  attempt: string;
}

/** A viewer's entry in one contest; `viewer` is the userId, else the session (as `Interaction.viewer`). */
export interface ContestEntrant {
  tenantSeq: number;
  contestId: string;
  viewer: string;
  /** The id of this attempt to enter (random): the claim carries it, as `PollVoter.attempt`. */
  attempt: string;
}

/**
 * Who has taken their one vote in a poll and their one entry in a contest, shared by every node
 * (full cluster mode: a NATS KV bucket; the first claim wins). The realtime gateway claims a
 * viewer's vote or entry before it counts and stores it, and releases the claim when the event
 * could not be stored; a claim taken already means the viewer voted or entered, on any node.
 *
 * A claim is kept for a bounded time (the backend's TTL): after that, the stored events a room
 * rebuilds its state from still refuse a second vote or entry on the node where the room is open.
 */
export interface ViewerClaims {
  /**
   * Claims the vote of `voter` in its poll: true when this call took it; false when the session,
   * or the userId (from any session), holds one already, in which case nothing stays claimed.
   * Throws (`storage_unavailable`) when the claims cannot be read or written in time.
   */
  claimVote(voter: PollVoter): Promise<boolean>;
  /**
   * Claims the vote of `voter`'s userId alone, for a session that voted and then took that
   * userId: true when this call took it, false when it was taken (the user voted too). Throws as
   * `claimVote`.
   */
  claimUser(voter: PollVoter & { userId: string }): Promise<boolean>;
  /**
   * Gives back a vote this attempt claimed but could not store (session and userId alike); a
   * claim taken by another attempt stays. Never throws: what cannot be given back now is given
   * back later (the backend's job), so the viewer may vote again.
   */
  releaseVote(voter: PollVoter): Promise<void>;
  /** Claims the entry of a viewer in a contest: true when this call took it, false when it was taken. Throws as `claimVote`. */
  claimEntry(entrant: ContestEntrant): Promise<boolean>;
  /** Gives back an entry this attempt claimed but could not store; as `releaseVote`. */
  releaseEntry(entrant: ContestEntrant): Promise<void>;
}

/** sha256 of the parts (joined by NUL), base64url: keys carry no identifier in clear. */
function digest(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('base64url');
}

/**
 * The keys of the claims, the same for every backend: `<tenantSeq>.<kind>.<hash>` (`vs`: a
 * session's vote, `vu`: a userId's vote, `e`: an entry). Valid NATS KV keys.
 */
export const claimKeys = {
  sessionVote: (voter: PollVoter): string => `${voter.tenantSeq}.vs.${digest(voter.pollId, voter.sessionId)}`,
  userVote: (voter: PollVoter & { userId: string }): string => `${voter.tenantSeq}.vu.${digest(voter.pollId, voter.userId)}`,
  entry: (entrant: ContestEntrant): string => `${entrant.tenantSeq}.e.${digest(entrant.contestId, entrant.viewer)}`,
};
