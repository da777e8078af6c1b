import { randomUUID } from 'node:crypto';
import { fanOut, systemClock, type Bus, type Clock, type NodeSockets, type NodeViewerCounts } from '@svc/protocol';
import type { Timers } from './throttle';

/** How often a node publishes its viewer counts, ms: a vanished node stops counting within two. */
export const VIEWER_COUNT_INTERVAL_MS = 1_000;

/**
 * Bounds of the interval another node says it publishes at, ms: its counts live two of its
 * intervals, so a peer announcing a huge one would otherwise keep them forever, and one
 * announcing a tiny one would see them expire between two of its messages.
 */
export const MIN_PEER_INTERVAL_MS = 100;
export const MAX_PEER_INTERVAL_MS = 60_000;

/** How long a node that went silent is remembered, ms. */
const HEARD_KEPT_MS = 24 * 60 * 60 * 1000;

/** A broadcast's count on one node. */
export type RoomCount = NodeViewerCounts['rooms'][number];

export interface ClusterViewerCountsDeps {
  bus: Bus;
  timers: Timers;
  /** This node's counts now: every broadcast with viewers here. */
  countsHere(): RoomCount[];
  /** This node's open sockets, counted by the connection caps of the other nodes; none published when unset. */
  socketsHere?(): NodeSockets;
  /** Whether this node's records in the session directory may outlive their sessions (`NodeViewerCounts.sessionsUnsure`); default never. */
  sessionsUnsure?(): boolean;
  /** The count of a broadcast on the other nodes changed (a node's news, or its counts expired). */
  changed(tenantSeq: number, broadcastId: string): void;
  /** Default VIEWER_COUNT_INTERVAL_MS. */
  intervalMs?: number;
  /** Default a random UUID. */
  node?: string;
  /** When other nodes were heard from (`silentForMs`); default the system clock. */
  clock?: Clock;
}

interface OtherNode {
  rooms: Map<string, RoomCount>;
  /** Open sockets per tenant seq, per address hash, and per `tenantSeq address-hash`. */
  tenants: Map<number, number>;
  addresses: Map<string, number>;
  tenantAddresses: Map<string, number>;
  expiry: unknown;
}

/**
 * Viewer counts across nodes without a presence entry per viewer: every node publishes, every
 * interval, one `viewers.counted` message with its count of each broadcast it has viewers of,
 * and adds the latest counts of the other nodes to its own. A node's counts expire two
 * intervals after its last message, so a node that vanished stops counting within two
 * intervals; a node that stops cleanly publishes an empty count first, so it stops counting at
 * once. Bus traffic: one message per node per interval, whatever the number of viewers.
 *
 * The same messages carry each node's open sockets (per tenant, and of its heavy addresses),
 * which the connection caps add to this node's own.
 */
export class ClusterViewerCounts {
  readonly node: string;
  private readonly intervalMs: number;
  private readonly others = new Map<string, OtherNode>();
  /** When each other node was last heard from, and its interval (kept after its counts expired). */
  private readonly heard = new Map<string, { atMs: number; intervalMs: number; sessionsUnsure: boolean }>();
  private readonly unsubscribe: () => void;
  private ticker: unknown = null;
  private stopped = false;

  constructor(private readonly deps: ClusterViewerCountsDeps) {
    this.node = deps.node ?? randomUUID();
    this.intervalMs = deps.intervalMs ?? VIEWER_COUNT_INTERVAL_MS;
    this.unsubscribe = deps.bus.subscribe('viewers.counted', (counts) => this.receive(counts));
    this.tick();
  }

  /** Viewers of a broadcast on the other nodes (their latest counts that did not expire). */
  elsewhere(tenantSeq: number, broadcastId: string): number {
    const key = roomKey(tenantSeq, broadcastId);
    let count = 0;
    for (const other of this.others.values()) count += other.rooms.get(key)?.viewers ?? 0;
    return count;
  }

  /** Every broadcast of a tenant with viewers on the other nodes, with their count there. */
  elsewhereOf(tenantSeq: number): RoomCount[] {
    const counts = new Map<string, RoomCount>();
    for (const other of this.others.values()) {
      for (const room of other.rooms.values()) {
        if (room.tenantSeq !== tenantSeq) continue;
        const known = counts.get(room.broadcastId);
        // Summed viewers only: one node's list of countries would not be the sum's.
        counts.set(room.broadcastId, { tenantSeq, broadcastId: room.broadcastId, campaignId: room.campaignId, viewers: (known?.viewers ?? 0) + room.viewers });
      }
    }
    return [...counts.values()];
  }

  /** Viewers of the tenant's broadcasts of one country on the other nodes, per broadcast (as far as their lists of countries go). */
  elsewhereOfCountry(tenantSeq: number, country: string): RoomCount[] {
    const counts = new Map<string, RoomCount>();
    for (const other of this.others.values()) {
      for (const room of other.rooms.values()) {
        const viewers = room.tenantSeq === tenantSeq ? room.countries?.find((entry) => entry[0] === country)?.[1] : undefined;
        if (!viewers) continue;
        const known = counts.get(room.broadcastId);
        counts.set(room.broadcastId, { tenantSeq, broadcastId: room.broadcastId, campaignId: room.campaignId, viewers: (known?.viewers ?? 0) + viewers });
      }
    }
    return [...counts.values()];
  }

  /** Open sockets of a tenant on the other nodes. */
  connectionsElsewhere(tenantSeq: number): number {
    let count = 0;
    for (const other of this.others.values()) count += other.tenants.get(tenantSeq) ?? 0;
    return count;
  }

  /** Open sockets of a client address (by its hash) on the other nodes that list it as heavy, over all tenants. */
  addressElsewhere(addressHash: string): number {
    let count = 0;
    for (const other of this.others.values()) count += other.addresses.get(addressHash) ?? 0;
    return count;
  }

  /** Open sockets of a client address (by its hash) among a tenant's on the other nodes that list it as heavy. */
  tenantAddressElsewhere(tenantSeq: number, addressHash: string): number {
    let count = 0;
    for (const other of this.others.values()) count += other.tenantAddresses.get(`${tenantSeq} ${addressHash}`) ?? 0;
    return count;
  }

  /**
   * How long a node has been gone, ms: 0 while its counts count (it published within its last two
   * intervals), else the time since they expired; null for a node this one never heard from.
   */
  silentForMs(node: string): number | null {
    if (node === this.node || this.others.has(node)) return 0;
    const heard = this.heard.get(node);
    if (!heard) return null;
    return Math.max(0, (this.deps.clock ?? systemClock).now() - heard.atMs - 2 * heard.intervalMs);
  }

  /** Whether a node said in its last message (alive or since vanished) that its session records may outlive their sessions. */
  sessionsUnsure(node: string): boolean {
    return this.heard.get(node)?.sessionsUnsure ?? false;
  }

  /** Publishes an empty count (the other nodes stop counting this one at once), stops publishing and forgets the other nodes. */
  stop(): void {
    if (this.stopped) return;
    const sockets: NodeSockets | undefined = this.deps.socketsHere ? { tenants: [], addresses: [], tenantAddresses: [] } : undefined;
    const unsure = this.deps.sessionsUnsure?.() === true;
    fanOut(this.deps.bus, 'viewers.counted', { node: this.node, intervalMs: this.intervalMs, rooms: [], ...(sockets && { sockets }), ...(unsure && { sessionsUnsure: true as const }) });
    this.stopped = true;
    this.unsubscribe();
    if (this.ticker !== null) this.deps.timers.clearTimeout(this.ticker);
    for (const other of this.others.values()) this.deps.timers.clearTimeout(other.expiry);
    this.others.clear();
  }

  private tick(): void {
    if (this.stopped) return;
    const sockets = this.deps.socketsHere?.();
    const unsure = this.deps.sessionsUnsure?.() === true;
    fanOut(this.deps.bus, 'viewers.counted', { node: this.node, intervalMs: this.intervalMs, rooms: this.deps.countsHere(), ...(sockets && { sockets }), ...(unsure && { sessionsUnsure: true as const }) });
    this.ticker = this.deps.timers.setTimeout(() => this.tick(), this.intervalMs);
  }

  private receive(counts: NodeViewerCounts): void {
    if (counts.node === this.node || this.stopped) return;
    const known = this.others.get(counts.node);
    if (known) this.deps.timers.clearTimeout(known.expiry);
    const intervalMs = Math.min(MAX_PEER_INTERVAL_MS, Math.max(MIN_PEER_INTERVAL_MS, counts.intervalMs));
    this.hear(counts.node, intervalMs, counts.sessionsUnsure === true);
    const rooms = new Map(counts.rooms.map((room) => [roomKey(room.tenantSeq, room.broadcastId), room]));
    const expiry = this.deps.timers.setTimeout(() => this.expire(counts.node), 2 * intervalMs);
    const sockets = counts.sockets;
    this.others.set(counts.node, {
      rooms,
      tenants: new Map(sockets?.tenants.map((entry) => [entry.tenantSeq, entry.connections])),
      addresses: new Map(sockets?.addresses.map((entry) => [entry.address, entry.connections])),
      tenantAddresses: new Map(sockets?.tenantAddresses.map((entry) => [`${entry.tenantSeq} ${entry.address}`, entry.connections])),
      expiry,
    });
    this.tellChanges(known?.rooms ?? new Map(), rooms);
  }

  private hear(node: string, intervalMs: number, sessionsUnsure: boolean): void {
    const now = (this.deps.clock ?? systemClock).now();
    this.heard.delete(node);
    this.heard.set(node, { atMs: now, intervalMs, sessionsUnsure });
    // Oldest first: nodes long gone (each restart is a new id) are forgotten after a day.
    for (const [gone, { atMs }] of this.heard) {
      if (now - atMs < HEARD_KEPT_MS) break;
      this.heard.delete(gone);
    }
  }

  private expire(node: string): void {
    const known = this.others.get(node);
    if (!known) return;
    this.others.delete(node);
    this.tellChanges(known.rooms, new Map());
  }

  private tellChanges(before: Map<string, RoomCount>, after: Map<string, RoomCount>): void {
    for (const [key, room] of before) if (after.get(key)?.viewers !== room.viewers) this.deps.changed(room.tenantSeq, room.broadcastId);
    for (const [key, room] of after) if (!before.has(key)) this.deps.changed(room.tenantSeq, room.broadcastId);
  }
}

function roomKey(tenantSeq: number, broadcastId: string): string {
  return `${tenantSeq}\u0000${broadcastId}`;
}
