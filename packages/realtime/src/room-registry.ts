import { overlayViews } from '@svc/content';
import { MAX_COUNTRIES_PER_ROOM_COUNT, type Clock, type ContentChange, type CountryViewers, type Overlay } from '@svc/protocol';
import type { ContentStore, Interaction, InteractionStore, Tenant } from '@svc/storage';
import { Room, type StoredEntry, type StoredVote } from './room';
import type { RoomCount } from './cluster-viewer-counts';
import { KeyedThrottle, type Timers } from './throttle';

/** Where a room's state is read from when it opens. */
export interface RoomSources {
  /** Campaign of a broadcast, registering it under the tenant's default campaign when new. */
  campaignOf(tenant: Tenant, broadcastId: string): Promise<number>;
  content: ContentStore;
  /** Votes and entries already stored, to rebuild a room's state. */
  interactions: InteractionStore;
}

/**
 * The rooms of this node, one per watched broadcast: opened from storage when the first viewer
 * comes, closed when nobody watches, and their throttled pushes (`poll.results`, `viewers`).
 */
export class RoomRegistry {
  private readonly rooms = new Map<string, Promise<Room>>();
  /** The opening each room came from: a release removes its own entry, never a newer room's. */
  private readonly openings = new WeakMap<Room, Promise<Room>>();
  /** Loaded rooms, by key: those that overlay changes reach. */
  private readonly loaded = new Map<string, Room>();
  /**
   * Overlay changes that came while a room was being read, by key: its read may have missed
   * them (a show stored just after its overlays were listed), so the room applies them, in order,
   * once built.
   */
  private readonly changesWhileLoading = new Map<string, ContentChange[]>();
  private readonly resultsThrottle: KeyedThrottle;
  private readonly viewersThrottle: KeyedThrottle;
  /** Further reads of rooms' stored votes and entries, due (see `rereadAfterMs`). */
  private readonly rereads = new Set<unknown>();

  constructor(
    private readonly sources: RoomSources,
    /** Minimum time between two pushes of one poll's results or one room's viewer count, ms. */
    throttleMs: number,
    clock: Clock,
    private readonly timers: Timers,
    /** Viewers of a broadcast on the other nodes, added to the counts viewers are told; none by default. */
    private readonly elsewhere: (tenantSeq: number, broadcastId: string) => number = () => 0,
    /**
     * When a room reads its stored votes and entries again, ms after it opened, in rising order:
     * those stored through another node just before were announced on the bus before the room
     * was there, and may not have been readable yet (full cluster mode: the writer's lag). The
     * reads stop once one after the first found nothing new. None by default.
     */
    private readonly rereadAfterMs: readonly number[] = [],
  ) {
    this.resultsThrottle = new KeyedThrottle(throttleMs, (key) => this.flushResults(key), clock, timers);
    this.viewersThrottle = new KeyedThrottle(throttleMs, (key) => void this.withRoom(key, (room) => room.flushViewers(this.elsewhere(room.tenantSeq, room.broadcastId))), clock, timers);
  }

  /** The count a new viewer's welcome carries: this node's viewers and the other nodes'. */
  welcomeCount(room: Room): number {
    return room.welcomeCount(this.elsewhere(room.tenantSeq, room.broadcastId));
  }

  /** The broadcast's count on the other nodes changed: its room here (if loaded) tells its viewers within the throttle. */
  viewersChangedElsewhere(tenantSeq: number, broadcastId: string): void {
    const room = this.loaded.get(roomKey(tenantSeq, broadcastId));
    if (room) this.viewersChanged(room);
  }

  /** This node's count of every broadcast it has viewers of, with their largest countries. */
  countsHere(): RoomCount[] {
    const counts: RoomCount[] = [];
    for (const room of this.loaded.values()) {
      if (room.connections.size === 0) continue;
      const count: RoomCount = { tenantSeq: room.tenantSeq, broadcastId: room.broadcastId, campaignId: room.campaignId, viewers: room.connections.size };
      const countries = largestCountries(room);
      counts.push(countries.length ? { ...count, countries } : count);
    }
    return counts;
  }

  /** The room of a broadcast, opened (read from storage) if needed; concurrent calls share one opening. */
  open(tenant: Tenant, broadcastId: string): Promise<Room> {
    const key = roomKey(tenant.seq, broadcastId);
    let room = this.rooms.get(key);
    if (!room) {
      const opening = this.load(tenant, broadcastId, key);
      room = opening;
      this.rooms.set(key, opening);
      opening.then(
        (opened) => this.openings.set(opened, opening),
        () => this.rooms.get(key) === opening && this.rooms.delete(key),
      );
    }
    return room;
  }

  /**
   * Closes a room nobody watches any more; it is rebuilt from storage when needed again. A room
   * already released is left alone: by then its broadcast may have a newer room (a connection
   * of the old one that closes late must not unregister it).
   */
  release(room: Room): void {
    if (room.released || room.sessions > 0 || room.connections.size > 0) return;
    room.released = true;
    if (this.loaded.get(room.key) === room) this.loaded.delete(room.key);
    if (this.rooms.get(room.key) === this.openings.get(room)) this.rooms.delete(room.key);
    this.viewersThrottle.drop(room.key);
    this.resultsThrottle.dropPrefix(`${room.key}\u0000`);
  }

  /** Whether a broadcast's room is open (or opening) here. */
  has(tenantSeq: number, broadcastId: string): boolean {
    return this.rooms.has(roomKey(tenantSeq, broadcastId));
  }

  /** The room's viewer count changed: pushed within the throttle. */
  viewersChanged(room: Room): void {
    this.viewersThrottle.trigger(room.key);
  }

  /** A poll's results changed: pushed within the throttle. */
  resultsChanged(room: Room, pollId: string): void {
    this.resultsThrottle.trigger(`${room.key}\u0000${pollId}`);
  }

  /** An overlay was shown, updated or hidden: the room of its broadcast (if loaded here) tells its viewers. */
  applyContentChange(tenantSeq: number, broadcastId: string, change: ContentChange): void {
    const key = roomKey(tenantSeq, broadcastId);
    const room = this.loaded.get(key);
    if (!room) {
      this.changesWhileLoading.get(key)?.push(change);
      return;
    }
    const message = room.applyChange(change);
    if (!message) return;
    room.broadcast(message);
    // A poll shown again carries the votes it already has; a fresh one needs no second message.
    if (message.type === 'overlay.show' && message.overlay.type === 'poll') room.sendResults(message.overlay.id);
  }

  /** Stored votes count in the live results of their room by the same rule as a rebuilt room's. */
  async noteVotes(tenantSeq: number, votes: StoredVote[]): Promise<void> {
    for (const vote of votes) {
      const room = this.rooms.get(roomKey(tenantSeq, vote.broadcastId));
      const loaded = room && (await room.catch(() => null));
      if (loaded?.addStoredVote(vote)) this.resultsChanged(loaded, vote.pollId);
    }
  }

  /** Stored contest entries (by any path, on any node) are recorded in the room of their broadcast, if open here and it has that contest. */
  async noteEntries(tenantSeq: number, entries: StoredEntry[]): Promise<void> {
    for (const entry of entries) {
      const room = this.rooms.get(roomKey(tenantSeq, entry.broadcastId));
      const loaded = room && (await room.catch(() => null));
      loaded?.addStoredEntry(entry.contestId, entry.viewer);
    }
  }

  /** Live viewers of a broadcast on this node. */
  async viewerCount(tenantSeq: number, broadcastId: string): Promise<number> {
    const room = this.rooms.get(roomKey(tenantSeq, broadcastId));
    return room ? (await room).connections.size : 0;
  }

  /** The tenant's opened rooms, each once. */
  async *roomsOf(tenantSeq: number): AsyncGenerator<Room> {
    for (const pending of this.rooms.values()) {
      const room = await pending.catch(() => null);
      if (room && room.tenantSeq === tenantSeq) yield room;
    }
  }

  /** Stops the throttled pushes (the gateway closes). */
  close(): void {
    for (const handle of this.rereads) this.timers.clearTimeout(handle);
    this.rereads.clear();
    this.resultsThrottle.dropAll();
    this.viewersThrottle.dropAll();
  }

  private async load(tenant: Tenant, broadcastId: string, key: string): Promise<Room> {
    const changes: ContentChange[] = [];
    this.changesWhileLoading.set(key, changes);
    let campaignId: number;
    let overlays: Overlay[];
    let interactions: Interaction[];
    try {
      campaignId = await this.sources.campaignOf(tenant, broadcastId);
      const [listed, stored] = await Promise.all([
        this.sources.content.listOverlays(tenant.seq, broadcastId),
        this.sources.interactions.listInteractions(tenant.seq, broadcastId),
      ]);
      overlays = await overlayViews(this.sources.content, listed);
      interactions = stored;
    } finally {
      if (this.changesWhileLoading.get(key) === changes) this.changesWhileLoading.delete(key);
    }
    // Those the read already had change nothing (see Room.applyChange).
    const room = new Room(key, tenant.seq, broadcastId, campaignId, overlays, interactions, changes);
    this.loaded.set(key, room);
    if (this.rereadAfterMs.length) this.scheduleReread(room, 0);
    return room;
  }

  /** Reads the room's stored events again at the `index`th time of `rereadAfterMs`, and schedules the next read. */
  private scheduleReread(room: Room, index: number): void {
    const afterMs = this.rereadAfterMs[index]! - (index === 0 ? 0 : this.rereadAfterMs[index - 1]!);
    const handle = this.timers.setTimeout(() => {
      this.rereads.delete(handle);
      if (room.released) return;
      // Best effort: a room that cannot read them again keeps what it has and what the bus brings.
      void this.reread(room).then(
        (foundNew) => {
          const next = index + 1;
          // The first read may come before a lagging writer stored anything; a later one that found nothing ends them.
          if (next < this.rereadAfterMs.length && (index === 0 || foundNew) && !room.released) this.scheduleReread(room, next);
        },
        () => index + 1 < this.rereadAfterMs.length && !room.released && this.scheduleReread(room, index + 1),
      );
    }, afterMs);
    this.rereads.add(handle);
  }

  /**
   * Counts the stored votes and entries a room missed; those it has count once (by event,
   * session and userId). Returns whether it found any it did not have.
   */
  private async reread(room: Room): Promise<boolean> {
    const changed = new Set<string>();
    let foundNew = false;
    for (const interaction of await this.sources.interactions.listInteractions(room.tenantSeq, room.broadcastId)) {
      if (interaction.kind === 'entry') {
        if (room.addStoredEntry(interaction.overlayId, interaction.viewer)) foundNew = true;
      } else if (room.addInteraction(interaction)) {
        changed.add(interaction.overlayId);
      }
    }
    for (const pollId of changed) this.resultsChanged(room, pollId);
    return foundNew || changed.size > 0;
  }

  private flushResults(key: string): void {
    const [room, pollId] = key.split('\u0000') as [string, string];
    void this.withRoom(room, (r) => r.flushResults(pollId));
  }

  private async withRoom(key: string, job: (room: Room) => void): Promise<void> {
    const room = this.rooms.get(key);
    if (room) job(await room);
  }
}

/** A room's viewers by known country: the `MAX_COUNTRIES_PER_ROOM_COUNT` largest countries. */
function largestCountries(room: Room): CountryViewers[] {
  const viewers = new Map<string, number>();
  for (const connection of room.connections) {
    const country = connection.session.country;
    if (country !== null) viewers.set(country, (viewers.get(country) ?? 0) + 1);
  }
  return [...viewers].sort((a, b) => b[1] - a[1]).slice(0, MAX_COUNTRIES_PER_ROOM_COUNT);
}

function roomKey(tenantSeq: number, broadcastId: string): string {
  return `${tenantSeq}:${broadcastId}`;
}
