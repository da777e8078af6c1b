import type { Overlay } from './overlays';

/**
 * What the admin side publishes when an overlay viewers can see changes (`content.changed`).
 * Changes made through several nodes may arrive out of order: a room applies a change only when
 * it is later than what it has of the overlay, by the stored `updatedAt` (see
 * `ContentStore.updateOverlay`), and nothing of an overlay after its deletion.
 */
export type ContentChange =
  | { kind: 'show' | 'update'; overlay: Overlay }
  | {
      kind: 'hide';
      overlayId: string;
      /** ISO server time of the hide. */
      hiddenAt: string;
      /** The hidden overlay's stored `updatedAt` (ISO); absent from a deletion's hide and from older nodes' hides. */
      updatedAt?: string;
      /** The overlay was deleted: changes of it that arrive later are dropped. */
      deleted?: true;
    };

/**
 * A stored `poll.voted` event, as much as the live results need. `data` is the event's `data`
 * object as JSON text: only a subscriber that counts the vote (a node with the broadcast's room
 * open) decodes it; decoding every vote on the ingest path cost CPU where no viewer watched.
 */
export interface StoredPollVote {
  eventId: string;
  sessionId: string;
  userId: string | null;
  broadcastId: string;
  timestampMs: number;
  receivedAtMs: number;
  data: string;
}

/**
 * A stored `contest.entered` event, as much as a room needs; `data` is the event's `data` as
 * JSON text (decoded only by a node with the broadcast's room open, as `StoredPollVote`'s).
 */
export interface StoredContestEntry {
  eventId: string;
  sessionId: string;
  userId: string | null;
  broadcastId: string;
  data: string;
}

/** One erasure job around its run (`user.erasing`, `user.erased`). */
export interface ErasureNotice {
  jobId: string;
  tenantSeq: number;
  /** Hash of the userId (`hashUserId`): all a job resumed after a restart knows. */
  userHash: string;
  /** The userId itself when the job was requested by this process, else null. */
  userId: string | null;
}

/** One node's live viewers of each broadcast it has viewers of (`viewers.counted`). */
export interface NodeViewerCounts {
  /** The publishing node (a random id per gateway). */
  node: string;
  /**
   * How often the node publishes its counts, ms: they count for two intervals, then expire.
   * Receivers bound it (`ClusterViewerCounts`), so that a bad peer cannot keep its counts forever.
   */
  intervalMs: number;
  /** Every broadcast with viewers on the node; a broadcast not listed has none there. */
  rooms: Array<{
    tenantSeq: number;
    broadcastId: string;
    campaignId: number;
    viewers: number;
    /**
     * The broadcast's viewers on the node by country: at most `MAX_COUNTRIES_PER_ROOM_COUNT`,
     * the largest first. The rest (viewers of no known country, or of a country beyond the
     * list) are `viewers` minus their sum. Absent: no viewer of a known country (or a node
     * of an older version).
     */
    countries?: CountryViewers[];
  }>;
  /** The node's open sockets, as the connection caps count them (absent from a node of an older version). */
  sockets?: NodeSockets;
  /**
   * Set while the node failed to remove from the session directory a session it ended (it tries
   * again): its records may outlive their sessions, so no other node resumes one of them then.
   */
  sessionsUnsure?: true;
}

/** Viewers of one country (`NodeViewerCounts`): a pair, about 10 bytes of JSON, since a node lists up to 50 per broadcast. */
export type CountryViewers = [country: string, viewers: number];

/** Countries a node lists per broadcast in `viewers.counted`, so that the message stays small. */
export const MAX_COUNTRIES_PER_ROOM_COUNT = 50;

/** Heavy addresses a node lists in `viewers.counted`, in each of `NodeSockets`' two lists. */
export const MAX_HEAVY_ADDRESSES = 100;

/**
 * A node's open sockets: per tenant, and of its heavy client addresses only (those holding a
 * sizeable part of an address cap on the node), each address as a hash, never in clear. The
 * size does not grow with the number of viewers: one entry per tenant with sockets, and at most
 * `MAX_HEAVY_ADDRESSES` addresses per list.
 */
export interface NodeSockets {
  /** Every tenant with open sockets on the node. */
  tenants: Array<{ tenantSeq: number; connections: number }>;
  /** Open sockets of a heavy address on the node, over all tenants. */
  addresses: Array<{ address: string; connections: number }>;
  /** Open sockets of a heavy address among one tenant's on the node. */
  tenantAddresses: Array<{ tenantSeq: number; address: string; connections: number }>;
}

/**
 * The topics of the bus and their payloads: "something happened" inside the service.
 *
 * Every payload is small, plain JSON data (no functions, class instances or `undefined`
 * fields), so that a bus between nodes can carry it as it is.
 *
 * Delivery guarantees, stated per topic:
 * - **fan-out**: at most once to every subscriber of every node; a subscriber that misses one
 *   (a node that was cut off) must recover from the stores, not from the bus.
 * - **awaited**: as fan-out, and the publisher awaits the promise `Bus.publish` returns, settled
 *   once this node's subscribers settled (their work, such as writes under way, is done).
 *
 * No topic is durable: what must survive a crash lives in a store (events, jobs, metadata).
 *
 * Across nodes (full cluster mode's bus on NATS), a topic either crosses to every node or stays
 * on the node that published it, as each topic says below and `BUS_TOPICS_ACROSS_NODES` decides.
 */
export interface BusTopics {
  /**
   * Events of a tenant became readable. Fan-out. Published by ingest after this node's commit
   * (embedded default, and metadata-only cluster mode), or by full cluster mode's writer after
   * it inserted them into ClickHouse (any node's writer). Subscriber: the dashboard's live
   * overview feed (packages/analytics). Crosses nodes: a writer's notice reaches every node.
   */
  'events.stored': { tenantSeq: number };
  /**
   * An overlay of a broadcast was shown, updated or hidden. Fan-out. Published by the content
   * service; subscriber: the realtime gateway's room of that broadcast. Crosses nodes: the
   * broadcast's viewers may be connected to any node.
   */
  'content.changed': { tenantSeq: number; broadcastId: string; change: ContentChange };
  /**
   * A broadcast's campaign link was created or changed. Fan-out. Published by the content
   * service; subscriber: ingest (forgets its cached campaign of the broadcast). Stays on its
   * node: the metadata change feed tells the other nodes, which announce it on their own bus.
   */
  'broadcast.registered': { tenantSeq: number; broadcastId: string };
  /**
   * `poll.voted` events were stored, by any path (HTTP, `track` messages, the gateway's own
   * votes). Fan-out. Published by ingest after the commit; subscriber: the gateway's live results.
   * Crosses nodes: the poll's viewers may be connected to any node.
   */
  'poll.voted': { tenantSeq: number; votes: StoredPollVote[] };
  /**
   * Viewers' own `broadcast.left` events (sent by the SDK, e.g. as a beacon over HTTP) were
   * stored. Fan-out. Published by ingest; subscriber: the gateway, which then writes none for
   * those sessions. Crosses nodes: the session may be open on another node.
   */
  'session.left': { tenantSeq: number; sessionIds: string[] };
  /**
   * An API key was revoked (on this node, or on another one as its change feed tells). Fan-out.
   * Published by the tenant service; subscriber: the gateway (closes the key's sockets). Stays on
   * its node: the metadata change feed tells the other nodes, whose tenant service announces it there.
   */
  'apiKey.revoked': { tenantSeq: number; keyId: string; key: string };
  /**
   * A user's data is about to be erased. Awaited: the deletion service waits for this node's
   * subscribers before erasing (the gateway forgets the userId of open sessions, ingest and the
   * commit queue finish what was sent before, the webhook dispatcher drops the user's deliveries).
   * A subscriber that fails fails the job. Crosses nodes (every node forgets the user's sessions);
   * the publisher awaits only its own node's subscribers.
   */
  'user.erasing': ErasureNotice;
  /**
   * A user's data was erased. Awaited (failures are reported, the job stays completed).
   * Published by the deletion service; subscribers: the webhook dispatcher (rechecks its
   * outbox) and the erasure purger (schedules the purge from the files). Crosses nodes, awaited on
   * the publishing node only.
   */
  'user.erased': ErasureNotice;
  /**
   * A node's viewer counts, published by its gateway every interval (full cluster mode). Fan-out.
   * Subscribers: the gateways of the other nodes, whose `viewers` messages, `welcome` and live
   * viewer counts add them to their own until they expire (two intervals without news: the
   * node vanished). Crosses nodes.
   */
  'viewers.counted': NodeViewerCounts;
  /**
   * `contest.entered` events were stored, by any path (HTTP, `track` messages, the gateway's
   * own entries). Fan-out. Published by ingest after the commit; subscriber: the gateway, whose
   * room of the broadcast (if open) records the viewer's entry, so that the viewer's `welcome`
   * on any node lists it. Crosses nodes: the viewer may connect to any node.
   */
  'contest.entered': { tenantSeq: number; entries: StoredContestEntry[] };
  /**
   * A viewer's session resumed on another node (full cluster mode): `node` holds it from now on.
   * Fan-out. Published by the gateway that resumed it; subscriber: the gateway of the node that
   * held it, which drops it without writing `broadcast.left` (closing its socket, if still open,
   * as replaced). Crosses nodes. `revision` is the directory record's revision that names `node`:
   * a node holding the session at a later revision (it moved back) ignores a late or repeated message.
   */
  'session.moved': { tenantSeq: number; sessionId: string; broadcastId: string; node: string; revision: number };
}

/** A topic of the bus. */
export type BusTopic = keyof BusTopics;
