import { PollTally, pollVoteProblem, type CastVote, type ContentChange, type Overlay, type PollResults, type ServerMessage, type VoteClaim } from '@svc/protocol';
import type { Interaction } from '@svc/storage';
import type { Connection } from './connection';

interface PollState {
  /** The votes that count, by the one rule of `countedVotes` (docs/analytics.md). */
  tally: PollTally;
  /** userIds a session took after voting here, with that vote's option: they cannot vote again. */
  bound: Map<string, number>;
  version: number;
  sentVersion: number;
}

/** A stored `poll.voted`, as the room checks it against its poll. */
export type StoredVote = CastVote & VoteClaim & { pollId: string };

/** A stored `contest.entered`, as the room records it: `viewer` is the userId, else the session. */
export interface StoredEntry {
  broadcastId: string;
  contestId: string;
  viewer: string;
}

/** Serializes a server message once, for every connection it goes to. */
export function frame(message: ServerMessage): Buffer {
  return Buffer.from(JSON.stringify(message));
}

/**
 * Live state of one broadcast on this node: its overlays, poll counts and contest entries
 * (rebuilt from the event log when the room opens), and the connections watching it.
 */
export class Room {
  readonly connections = new Set<Connection>();
  /** Sessions of this room, connected or within their reconnect grace. */
  sessions = 0;
  /** Set once nobody watches: the gateway builds a new room for the next viewer. */
  released = false;
  private readonly overlays = new Map<string, Overlay>();
  private readonly polls = new Map<string, PollState>();
  private readonly contests = new Map<string, Set<string>>();
  private viewersSent = -1;

  /**
   * The stored time (`updatedAt`, ms) of the latest change the room has of each overlay, those
   * it does not hold included (a hide of an overlay created since it opened).
   */
  private readonly storedAt = new Map<string, number>();
  /** Overlays deleted since the room opened: their changes that arrive late are dropped. */
  private readonly deleted = new Set<string>();

  /**
   * @param changesWhileLoading overlay changes heard while `overlays` were read: the read may
   *   have missed them. They go into the overlays (by the rule of `applyChange`) before the
   *   stored votes and entries count, so that votes on a poll shown meanwhile count.
   */
  constructor(
    readonly key: string,
    readonly tenantSeq: number,
    readonly broadcastId: string,
    readonly campaignId: number,
    overlays: Overlay[],
    interactions: Interaction[],
    changesWhileLoading: readonly ContentChange[] = [],
  ) {
    for (const overlay of overlays) {
      this.setOverlay(overlay);
      this.isLatest(overlay.id, overlay.updatedAt);
    }
    for (const change of changesWhileLoading) this.applyChange(change);
    for (const interaction of interactions) this.addInteraction(interaction);
    for (const poll of this.polls.values()) poll.sentVersion = poll.version;
  }

  activeOverlays(): Overlay[] {
    return [...this.overlays.values()].filter((o) => o.active);
  }

  activeOverlay(id: string): Overlay | undefined {
    const overlay = this.overlays.get(id);
    return overlay?.active ? overlay : undefined;
  }

  /**
   * Applies an overlay's show, update or hide heard on the bus, and returns what its viewers
   * must be told (null: nothing). Changes made through several nodes may arrive in another order
   * than the store made them: one that is not later than what the room has of the overlay (by
   * its stored `updatedAt`), or of an overlay deleted, changes nothing.
   */
  applyChange(change: ContentChange): ServerMessage | null {
    const id = change.kind === 'hide' ? change.overlayId : change.overlay.id;
    if (this.deleted.has(id)) return null;
    const known = this.overlays.get(id);
    if (change.kind === 'hide') {
      if (change.deleted) {
        this.deleted.add(id);
        this.storedAt.delete(id);
      } else if (!this.isLatest(id, change.updatedAt)) return null;
      if (known) this.overlays.set(id, { ...known, active: false, ...(change.updatedAt === undefined ? {} : { updatedAt: change.updatedAt }) });
      // Viewers were shown only what the room had on screen.
      return known?.active ? { type: 'overlay.hide', overlayId: id, hiddenAt: change.hiddenAt } : null;
    }
    if (!this.isLatest(id, change.overlay.updatedAt)) return null;
    this.setOverlay(change.overlay);
    if (!change.overlay.active) return null;
    // What comes on screen is a show for viewers (a poll's results follow), whichever change brought it.
    return { type: change.kind === 'show' || !known?.active ? 'overlay.show' : 'overlay.update', overlay: change.overlay };
  }

  private setOverlay(overlay: Overlay): void {
    this.overlays.set(overlay.id, overlay);
    if (overlay.type === 'poll') this.pollState(overlay.id).tally.widen(overlay.options.length);
  }

  /**
   * Whether a change of an overlay stored at `updatedAt` is later than the latest the room has,
   * and if so, records it as the latest. A time missing or unreadable (a hide from a node of an
   * older version) counts as later, and is not recorded.
   */
  private isLatest(id: string, updatedAt: string | undefined): boolean {
    const at = Date.parse(updatedAt ?? '');
    if (at <= (this.storedAt.get(id) ?? -Infinity)) return false;
    if (Number.isFinite(at)) this.storedAt.set(id, at);
    return true;
  }

  /** Whether this session, or this user (also one the session took after voting), has voted in the poll. */
  hasVoted(pollId: string, sessionId: string, userId: string | null): boolean {
    const poll = this.polls.get(pollId);
    return poll !== undefined && (poll.tally.hasVoted(sessionId, userId) || (userId !== null && poll.bound.has(userId)));
  }

  /** Records a vote of a viewer who has not voted (see `hasVoted`), checked against the poll by the caller. */
  recordVote(pollId: string, vote: CastVote): void {
    const poll = this.pollState(pollId);
    if (poll.tally.add(vote)) poll.version++;
  }

  /** Takes back a vote whose event could not be stored. */
  retractVote(pollId: string, eventId: string): void {
    const poll = this.polls.get(pollId);
    if (poll?.tally.remove(eventId)) poll.version++;
  }

  /**
   * Counts a stored vote (sent over HTTP, in a `track` message, or read back when the room
   * opens) by the same rule as live votes; one that does not match a poll of this room counts
   * nowhere. Returns whether the poll's counts changed.
   */
  addStoredVote(vote: StoredVote): boolean {
    const overlay = this.overlays.get(vote.pollId);
    if (overlay?.type !== 'poll') return false;
    const definition = {
      id: overlay.id,
      broadcastId: overlay.broadcastId,
      question: overlay.question,
      options: overlay.options,
      createdAtMs: Date.parse(overlay.createdAt),
      ...(overlay.closesAt === undefined ? {} : { closesAtMs: Date.parse(overlay.closesAt) }),
    };
    if (pollVoteProblem(definition, vote)) return false;
    const poll = this.pollState(vote.pollId);
    const { eventId, sessionId, userId, timestampMs, optionIndex } = vote;
    if (!poll.tally.add({ eventId, sessionId, userId, timestampMs, optionIndex })) return false;
    poll.version++;
    return true;
  }

  /** Counts a stored vote or records a stored entry, read back from storage; returns whether a poll's counts changed. */
  addInteraction(interaction: Interaction): boolean {
    if (interaction.kind === 'entry') {
      this.addStoredEntry(interaction.overlayId, interaction.viewer);
      return false;
    }
    return this.addStoredVote({ ...interaction, pollId: interaction.overlayId, broadcastId: this.broadcastId, optionIndex: interaction.optionIndex ?? -1 });
  }

  /** A session took another userId: where the session voted, that user has voted too. Returns those polls. */
  bindUser(sessionId: string, userId: string): string[] {
    const voted: string[] = [];
    for (const [pollId, poll] of this.polls) {
      const choice = poll.tally.choiceOf(sessionId, null);
      if (choice === undefined) continue;
      voted.push(pollId);
      if (!poll.bound.has(userId)) poll.bound.set(userId, choice);
    }
    return voted;
  }

  /** Whether this viewer (the userId, else the session) has entered the contest. */
  hasEntered(contestId: string, viewer: string): boolean {
    return this.contests.get(contestId)?.has(viewer) ?? false;
  }

  /** Records a viewer's entry; false when the viewer had entered already. */
  recordEntry(contestId: string, viewer: string): boolean {
    let entrants = this.contests.get(contestId);
    if (!entrants) this.contests.set(contestId, (entrants = new Set()));
    if (entrants.has(viewer)) return false;
    entrants.add(viewer);
    return true;
  }

  /**
   * Records a stored entry (sent over HTTP, in a `track` message, through another node, or read
   * back when the room opens) only when this room has a contest of that id: entries of unknown
   * ids, which any client holding the public key may send, take no room memory. Returns whether
   * it was recorded.
   */
  addStoredEntry(contestId: string, viewer: string): boolean {
    if (this.overlays.get(contestId)?.type !== 'contest') return false;
    return this.recordEntry(contestId, viewer);
  }

  retractEntry(contestId: string, viewer: string): void {
    this.contests.get(contestId)?.delete(viewer);
  }

  results(pollId: string): PollResults {
    const poll = this.pollState(pollId);
    return { pollId, counts: poll.tally.counts, total: poll.tally.total };
  }

  /** Results of the active polls, for a welcome. */
  activeResults(): PollResults[] {
    return this.activeOverlays().filter((o) => o.type === 'poll').map((o) => this.results(o.id));
  }

  /** What one viewer (`viewer`: the userId, else the session) has done here already. */
  viewerState(viewer: string, sessionId: string, userId: string | null): { votes: Record<string, number>; contests: string[] } {
    const votes: Record<string, number> = {};
    for (const [pollId, poll] of this.polls) {
      const choice = poll.tally.choiceOf(sessionId, userId) ?? (userId === null ? undefined : poll.bound.get(userId));
      if (choice !== undefined) votes[pollId] = choice;
    }
    const contests = [...this.contests].filter(([, entrants]) => entrants.has(viewer)).map(([id]) => id);
    return { votes, contests };
  }

  /** Sends to every connection; `droppable` updates are skipped for clients that lag behind. */
  broadcast(message: ServerMessage, droppable = false): void {
    if (!this.connections.size) return;
    const data = frame(message);
    for (const connection of this.connections) connection.send(data, droppable);
  }

  /** Sends the poll's results if they changed since the last time. */
  flushResults(pollId: string): void {
    const poll = this.polls.get(pollId);
    if (!poll || poll.version === poll.sentVersion) return;
    poll.sentVersion = poll.version;
    this.broadcast({ type: 'poll.results', ...this.results(pollId) }, true);
  }

  /**
   * Sends a poll's results now (it was shown again) when it has votes, and counts them as
   * sent: a throttled update still due for the same votes would repeat them.
   */
  sendResults(pollId: string): void {
    const poll = this.pollState(pollId);
    poll.sentVersion = poll.version;
    if (poll.tally.total > 0) this.broadcast({ type: 'poll.results', ...this.results(pollId) }, true);
  }

  /**
   * The count for a new viewer's welcome. When it differs from the last count sent, the next
   * update goes out even if the count is back to that one by then, or the new viewer would
   * keep the count of its welcome. `elsewhere`: the broadcast's viewers on other nodes.
   */
  welcomeCount(elsewhere = 0): number {
    const count = this.connections.size + elsewhere;
    if (count !== this.viewersSent) this.viewersSent = -1;
    return count;
  }

  /** Sends the viewer count (with `elsewhere`, the viewers on other nodes) if it changed since the last time. */
  flushViewers(elsewhere = 0): void {
    const count = this.connections.size + elsewhere;
    if (count === this.viewersSent) return;
    this.viewersSent = count;
    this.broadcast({ type: 'viewers', count }, true);
  }

  private pollState(pollId: string): PollState {
    let poll = this.polls.get(pollId);
    if (!poll) this.polls.set(pollId, (poll = { tally: new PollTally(), bound: new Map(), version: 0, sentVersion: 0 }));
    return poll;
  }
}
