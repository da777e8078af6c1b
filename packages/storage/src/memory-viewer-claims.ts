import { claimKeys, type ContestEntrant, type PollVoter, type ViewerClaims } from './viewer-claims';

/**
 * Claims in this process's memory, kept until released (for one node, or tests; a gateway
 * without claims relies on its rooms, which hold the same knowledge on one node).
 */
export class MemoryViewerClaims implements ViewerClaims {
  /** The attempt holding each key. */
  private readonly taken = new Map<string, string>();

  async claimVote(voter: PollVoter): Promise<boolean> {
    const session = claimKeys.sessionVote(voter);
    const user = voter.userId === null ? null : claimKeys.userVote({ ...voter, userId: voter.userId });
    if (this.taken.has(session) || (user !== null && this.taken.has(user))) return false;
    this.taken.set(session, voter.attempt);
    if (user !== null) this.taken.set(user, voter.attempt);
    return true;
  }

  async claimUser(voter: PollVoter & { userId: string }): Promise<boolean> {
    const user = claimKeys.userVote(voter);
    if (this.taken.has(user)) return false;
    this.taken.set(user, voter.attempt);
    return true;
  }

  async releaseVote(voter: PollVoter): Promise<void> {
    this.giveBack(claimKeys.sessionVote(voter), voter.attempt);
    if (voter.userId !== null) this.giveBack(claimKeys.userVote({ ...voter, userId: voter.userId }), voter.attempt);
  }

  async claimEntry(entrant: ContestEntrant): Promise<boolean> {
    const key = claimKeys.entry(entrant);
    if (this.taken.has(key)) return false;
    this.taken.set(key, entrant.attempt);
    return true;
  }

  async releaseEntry(entrant: ContestEntrant): Promise<void> {
    this.giveBack(claimKeys.entry(entrant), entrant.attempt);
  }

  private giveBack(key: string, attempt: string): void {
    if (this.taken.get(key) === attempt) this.taken.delete(key);
  }
}
