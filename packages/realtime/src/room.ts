import type { Overlay, PollResults, ServerMessage } from '@svc/protocol';
import type { Interaction } from '@svc/storage';
import type { Connection } from './connection';

interface PollState {
  counts: number[];
  /** viewer → option index; the first vote of a viewer is the one that counts. */
  voters: Map<string, number>;
  version: number;
  sentVersion: number;
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
  unsubscribe: () => void = () => {};

  constructor(
    readonly key: string,
    readonly tenantSeq: number,
    readonly broadcastId: string,
    readonly campaignId: number,
    overlays: Overlay[],
    interactions: Interaction[],
  ) {
    for (const overlay of overlays) this.setOverlay(overlay);
    for (const interaction of interactions) {
      if (interaction.kind === 'vote' && interaction.optionIndex !== null) this.recordVote(interaction.overlayId, interaction.viewer, interaction.optionIndex);
      if (interaction.kind === 'entry') this.recordEntry(interaction.overlayId, interaction.viewer);
    }
    for (const poll of this.polls.values()) poll.sentVersion = poll.version;
  }

  activeOverlays(): Overlay[] {
    return [...this.overlays.values()].filter((o) => o.active);
  }

  activeOverlay(id: string): Overlay | undefined {
    const overlay = this.overlays.get(id);
    return overlay?.active ? overlay : undefined;
  }

  setOverlay(overlay: Overlay): void {
    this.overlays.set(overlay.id, overlay);
    if (overlay.type === 'poll') {
      const poll = this.pollState(overlay.id);
      while (poll.counts.length < overlay.options.length) poll.counts.push(0);
    }
  }

  removeOverlay(id: string): void {
    const overlay = this.overlays.get(id);
    if (overlay) this.overlays.set(id, { ...overlay, active: false });
  }

  /** Records a vote unless the viewer already voted; returns whether it counted. */
  recordVote(pollId: string, viewer: string, optionIndex: number): boolean {
    const poll = this.pollState(pollId);
    if (poll.voters.has(viewer)) return false;
    poll.voters.set(viewer, optionIndex);
    while (poll.counts.length <= optionIndex) poll.counts.push(0);
    poll.counts[optionIndex]!++;
    poll.version++;
    return true;
  }

  /** Takes back a vote whose event could not be stored. */
  retractVote(pollId: string, viewer: string): void {
    const poll = this.polls.get(pollId);
    const optionIndex = poll?.voters.get(viewer);
    if (!poll || optionIndex === undefined) return;
    poll.voters.delete(viewer);
    poll.counts[optionIndex]!--;
    poll.version++;
  }

  recordEntry(contestId: string, viewer: string): boolean {
    let entrants = this.contests.get(contestId);
    if (!entrants) this.contests.set(contestId, (entrants = new Set()));
    if (entrants.has(viewer)) return false;
    entrants.add(viewer);
    return true;
  }

  retractEntry(contestId: string, viewer: string): void {
    this.contests.get(contestId)?.delete(viewer);
  }

  results(pollId: string): PollResults {
    const poll = this.pollState(pollId);
    return { pollId, counts: [...poll.counts], total: poll.voters.size };
  }

  /** Results of the active polls, for a welcome. */
  activeResults(): PollResults[] {
    return this.activeOverlays().filter((o) => o.type === 'poll').map((o) => this.results(o.id));
  }

  /** What one viewer has done here already. */
  viewerState(viewer: string): { votes: Record<string, number>; contests: string[] } {
    const votes: Record<string, number> = {};
    for (const [pollId, poll] of this.polls) {
      const choice = poll.voters.get(viewer);
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
    if (poll.voters.size > 0) this.broadcast({ type: 'poll.results', ...this.results(pollId) }, true);
  }

  /**
   * The count for a new viewer's welcome. When it differs from the last count sent, the next
   * update goes out even if the count is back to that one by then, or the new viewer would
   * keep the count of its welcome.
   */
  welcomeCount(): number {
    const count = this.connections.size;
    if (count !== this.viewersSent) this.viewersSent = -1;
    return count;
  }

  /** Sends the viewer count if it changed since the last time. */
  flushViewers(): void {
    const count = this.connections.size;
    if (count === this.viewersSent) return;
    this.viewersSent = count;
    this.broadcast({ type: 'viewers', count }, true);
  }

  private pollState(pollId: string): PollState {
    let poll = this.polls.get(pollId);
    if (!poll) this.polls.set(pollId, (poll = { counts: [], voters: new Map(), version: 0, sentVersion: 0 }));
    return poll;
  }
}
