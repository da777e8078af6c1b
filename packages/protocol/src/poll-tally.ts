import { voteBefore, type CastVote } from './poll-votes';

/**
 * The results of one poll kept up to date vote by vote, by the rule of `countedVotes`: a vote
 * counts when it is the first of its session and the first of its `userId`. Adding a vote
 * only changes the standing of the first vote of its session and of its user, so each change
 * costs the size of those two groups (one vote each, almost always).
 */
export class PollTally {
  private readonly votes = new Map<string, CastVote>();
  private readonly bySession = new Map<string, CastVote[]>();
  private readonly byUser = new Map<string, CastVote[]>();
  private readonly counted = new Set<CastVote>();
  private readonly optionCounts: number[] = [];

  constructor(optionCount = 0) {
    this.widen(optionCount);
  }

  /** Per option, the votes that count. */
  get counts(): number[] {
    return [...this.optionCounts];
  }

  /** Viewers whose vote counts. */
  get total(): number {
    return this.counted.size;
  }

  /** Lists at least `optionCount` options. */
  widen(optionCount: number): void {
    while (this.optionCounts.length < optionCount) this.optionCounts.push(0);
  }

  /** Adds a valid vote (again: ignored); returns whether the counts changed. */
  add(vote: CastVote): boolean {
    if (this.votes.has(vote.eventId)) return false;
    this.votes.set(vote.eventId, vote);
    return this.regroup(vote, () => {
      push(this.bySession, vote.sessionId, vote);
      if (vote.userId !== null) push(this.byUser, vote.userId, vote);
    });
  }

  /** Takes a vote back (its event could not be stored); returns whether the counts changed. */
  remove(eventId: string): boolean {
    const vote = this.votes.get(eventId);
    if (!vote) return false;
    this.votes.delete(eventId);
    return this.regroup(vote, () => {
      pull(this.bySession, vote.sessionId, vote);
      if (vote.userId !== null) pull(this.byUser, vote.userId, vote);
    });
  }

  /** Whether this session, or this user, has voted here (whether or not that vote counts). */
  hasVoted(sessionId: string, userId: string | null): boolean {
    return this.bySession.has(sessionId) || (userId !== null && this.byUser.has(userId));
  }

  /** The option of the first vote of this session, else of this user. */
  choiceOf(sessionId: string, userId: string | null): number | undefined {
    const group = this.bySession.get(sessionId) ?? (userId === null ? undefined : this.byUser.get(userId));
    return group ? first(group).optionIndex : undefined;
  }

  /** Applies a change to the groups of `vote`, then recounts the votes whose standing it can change. */
  private regroup(vote: CastVote, change: () => void): boolean {
    const affected = new Set<CastVote>([vote, ...this.firstsAround(vote)]);
    change();
    for (const v of this.firstsAround(vote)) affected.add(v);
    let changed = false;
    for (const v of affected) {
      const counts = this.votes.has(v.eventId) && this.isCounted(v);
      if (counts === this.counted.has(v)) continue;
      changed = true;
      this.widen(v.optionIndex + 1);
      if (counts) {
        this.counted.add(v);
        this.optionCounts[v.optionIndex]!++;
      } else {
        this.counted.delete(v);
        this.optionCounts[v.optionIndex]!--;
      }
    }
    return changed;
  }

  private firstsAround(vote: CastVote): CastVote[] {
    const groups = [this.bySession.get(vote.sessionId), vote.userId === null ? undefined : this.byUser.get(vote.userId)];
    return groups.flatMap((group) => (group ? [first(group)] : []));
  }

  private isCounted(vote: CastVote): boolean {
    const session = this.bySession.get(vote.sessionId);
    if (!session || first(session) !== vote) return false;
    if (vote.userId === null) return true;
    const user = this.byUser.get(vote.userId);
    return user !== undefined && first(user) === vote;
  }
}

function first(group: CastVote[]): CastVote {
  return group.reduce((a, b) => (voteBefore(b, a) ? b : a));
}

function push(groups: Map<string, CastVote[]>, key: string, vote: CastVote): void {
  const group = groups.get(key);
  if (group) group.push(vote);
  else groups.set(key, [vote]);
}

function pull(groups: Map<string, CastVote[]>, key: string, vote: CastVote): void {
  const group = groups.get(key)?.filter((v) => v !== vote);
  if (group?.length) groups.set(key, group);
  else groups.delete(key);
}
