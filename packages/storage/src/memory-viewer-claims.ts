import { claimKeys, type ContestEntrant, type PollVoter, type ViewerClaims } from './viewer-claims';

/**
 * Claims in this process's memory, kept until released (for one node, or tests; a gateway
 * without claims relies on its rooms, which hold the same knowledge on one node).
 */
export class MemoryViewerClaims implements ViewerClaims {
  private readonly taken = new Set<string>();

  async claimVote(voter: PollVoter): Promise<boolean> {
    const session = claimKeys.sessionVote(voter);
    const user = voter.userId === null ? null : claimKeys.userVote({ ...voter, userId: voter.userId });
    if (this.taken.has(session) || (user !== null && this.taken.has(user))) return false;
    this.taken.add(session);
    if (user !== null) this.taken.add(user);
    return true;
  }

  async releaseVote(voter: PollVoter): Promise<void> {
    this.taken.delete(claimKeys.sessionVote(voter));
    if (voter.userId !== null) this.taken.delete(claimKeys.userVote({ ...voter, userId: voter.userId }));
  }

  async claimEntry(entrant: ContestEntrant): Promise<boolean> {
    const key = claimKeys.entry(entrant);
    if (this.taken.has(key)) return false;
    this.taken.add(key);
    return true;
  }

  async releaseEntry(entrant: ContestEntrant): Promise<void> {
    this.taken.delete(claimKeys.entry(entrant));
  }
}
