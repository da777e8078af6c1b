import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { uuidv7 } from 'uuidv7';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import {
  redactText,
  parseClientJson,
  REALTIME_SUBPROTOCOL,
  type Bus,
  type Clock,
  type LiveViewerRegistry,
  type ContentChange,
} from '@svc/protocol';
import type { ContentStore, InteractionStore, FoundSession, SessionDirectory, Tenant, ViewerClaims } from '@svc/storage';
import { AddressAdmission, DEFAULT_ADDRESS_ADMISSION_OPTIONS, type AddressAdmissionOptions, type AdmissionRefusal, type AdmissionTicket } from './address-admission';
import { ClusterViewerCounts, VIEWER_COUNT_INTERVAL_MS } from './cluster-viewer-counts';
import { Connection, type Session } from './connection';
import { MessageBudget } from './message-budget';
import { gatewayViewerCounts, subscribeGateway } from './gateway-subscriptions';
import { IngestCoalescer } from './ingest-coalescer';
import { Interactions, reply, type GatewayEventSink } from './interactions';
import { frame, type Room, type StoredEntry, type StoredVote } from './room';
import { RoomRegistry } from './room-registry';
import { SessionRegistry, type LeaveReason } from './session-registry';
import { SessionsAcrossNodes } from './sessions-across-nodes';
import { realTimers, type Timers } from './throttle';
import { refuseUpgrade } from './upgrade-refusal';
import { admitViewer } from './viewer-admission';

export const WS_PATH = '/v1/ws';

/** The gateway's limits and timing; the address limits are `AddressAdmissionOptions`. */
export interface GatewayOptions extends AddressAdmissionOptions {
  /** Largest client message, bytes (default 64 KB); bigger ones close the socket with 1009. */
  maxPayloadBytes: number;
  /**
   * Interval of the server's pings, ms (default 15,000); a connection that answered none
   * within one interval is closed as timed out. Told to clients in `welcome`.
   */
  heartbeatIntervalMs: number;
  /** A session that reconnects within this time, ms, is the same session (default 30,000). */
  resumeGraceMs: number;
  /** Minimum time between two `poll.results` of one poll, or two `viewers` of one broadcast, ms (default 1,000). */
  throttleMs: number;
  /**
   * Open sockets of one tenant (default 100,000); more are closed with 1013 `too_many_connections`.
   * Counted on this node; with `viewerCountsAcrossNodes`, over the cluster, within a tolerance:
   * the other nodes' counts are up to one `viewerCountIntervalMs` old (plus the bus's delivery),
   * so the cluster may hold more than the cap by the sockets the other nodes admitted within
   * that interval (at most N nodes × the joins each admits per interval), and a node that
   * vanished still counts until its counts expire (two intervals). The address caps
   * (`AddressAdmissionOptions`) count across nodes likewise (see `AddressesElsewhere`).
   */
  maxConnectionsPerTenant: number;
  /** Sustained client messages per second per connection (default 20). */
  messagesPerSecond: number;
  /** Messages a connection may send at once before the sustained rate applies (default 60). */
  messageBurst: number;
  /** Messages dropped within one stretch of over-rate sending before the socket is closed (default 200). */
  maxDroppedMessages: number;
  /** How long a client may keep sending over its rate before the socket is closed (4429), ms (default 3,000). */
  maxOverRateMs: number;
  /** Bytes waiting to be sent to a client above which throttled updates are skipped for it (default 64 KB). */
  softBufferBytes: number;
  /** Bytes waiting to be sent to a client above which it is closed as too slow (4429, default 1 MB). */
  hardBufferBytes: number;
  /**
   * With viewer counts across nodes: how often this node publishes its counts (viewers, and open
   * sockets for the caps), ms (default 1,000); a vanished node stops counting within two
   * intervals, one that closes cleanly at once.
   */
  viewerCountIntervalMs: number;
  /**
   * With claims across nodes (full cluster mode): when, ms after a room opened, it reads the
   * stored votes and entries again (default 5 s, 30 s, 2 min and 10 min; at most four queries per
   * room), for those stored through another node while it opened, before the event writer made
   * them readable; the reads stop once one after the first found nothing new.
   */
  rereadStoredAfterMs: readonly number[];
}

export const DEFAULT_GATEWAY_OPTIONS: GatewayOptions = {
  maxPayloadBytes: 64 * 1024,
  heartbeatIntervalMs: 15_000,
  resumeGraceMs: 30_000,
  throttleMs: 1_000,
  maxConnectionsPerTenant: 100_000,
  messagesPerSecond: 20,
  messageBurst: 60,
  maxDroppedMessages: 200,
  maxOverRateMs: 3_000,
  softBufferBytes: 64 * 1024,
  hardBufferBytes: 1024 * 1024,
  viewerCountIntervalMs: VIEWER_COUNT_INTERVAL_MS,
  rereadStoredAfterMs: [5_000, 30_000, 120_000, 600_000],
  ...DEFAULT_ADDRESS_ADMISSION_OPTIONS,
};

/** Why the gateway refused or closed a connection, as counted in its refusal metric. */
export type ConnectionRefusal = AdmissionRefusal | 'tenant_connections' | 'message_rate';

export type { GatewayEventSink } from './interactions';

export interface GatewayDeps {
  authenticate(apiKey: string): Promise<Tenant | null>;
  /** Viewer country for an upgrade request (header, address, tenant fallback). */
  country(request: IncomingMessage, tenant: Tenant): string | null;
  events: GatewayEventSink;
  content: ContentStore;
  /** Votes and entries already stored, to rebuild a room's state. */
  interactions: InteractionStore;
  /** Where the gateway follows overlay changes, stored votes, revoked keys and erasures (see `subscribeGateway`). */
  bus: Bus;
  /**
   * Every node's claims of a viewer's one vote per poll and one entry per contest (full cluster
   * mode), taken before a vote or entry counts here; none by default: this node's rooms decide alone.
   */
  claims?: ViewerClaims;
  /** Where the gateway provides its live viewer counts (the dashboard reads them); none when unset. */
  liveViewers?: LiveViewerRegistry;
  /**
   * Whether the counts viewers and the dashboard see add the other nodes' (`viewers.counted` on
   * a bus between nodes: full cluster mode), and the connection caps count the other nodes'
   * sockets; default false, this node's viewers and sockets only.
   */
  viewerCountsAcrossNodes?: boolean;
  /**
   * The directory of open sessions shared by the nodes: with `viewerCountsAcrossNodes` (which
   * tells which nodes are alive), a session resumes on this node after its viewer left another
   * one (`SessionsAcrossNodes`); default none, a session lives on one node.
   */
  sessionDirectory?: SessionDirectory;
  clock: Clock;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  timers?: Timers;
  /** The client address of an upgrade request (behind trusted proxies, the forwarded one); default the peer's. */
  clientAddress?(request: IncomingMessage): string;
  /** Told of every refused upgrade and every connection closed for its rate. */
  refused?(reason: ConnectionRefusal): void;
}

const REQUEST_ID = /^[\w.:-]{1,64}$/;

/**
 * The realtime gateway (protocol `svc.v1`, docs/realtime-protocol.md): authenticates viewers,
 * keeps one room per watched broadcast, pushes overlays and throttled results and viewer
 * counts, takes votes, entries and tracked events, and writes `broadcast.left` for sessions
 * that vanish.
 *
 * It coordinates the parts that do the work: the admission of sockets (`AddressAdmission`
 * before the handshake, `admitViewer` after it), the sessions with their reconnect grace
 * (`SessionRegistry`), the rooms with their throttled pushes (`RoomRegistry`), what viewers
 * send (`Interactions`) and each `Connection`'s budget and liveness; it follows the bus
 * through `subscribeGateway`.
 */
export class Gateway {
  private readonly wss: WebSocketServer;
  private readonly options: GatewayOptions;
  private readonly timers: Timers;
  private readonly rooms: RoomRegistry;
  /** The other nodes' viewer counts, when counted across nodes. */
  private readonly viewerCounts: ClusterViewerCounts | null;
  private readonly interactions: Interactions;
  /** The gateway's own single-event writes (votes, entries, `broadcast.left`), coalesced per tenant under load. */
  private readonly writes: IngestCoalescer;
  private readonly unsubscribe: () => void;
  private readonly sessions: SessionRegistry;
  /** Sessions resumed across nodes, with a shared directory of sessions. */
  private readonly across: SessionsAcrossNodes | null;
  private readonly admission: AddressAdmission;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly pendingWrites = new Set<Promise<unknown>>();
  private closing = false;

  constructor(
    private readonly deps: GatewayDeps,
    options: Partial<GatewayOptions> = {},
  ) {
    this.options = { ...DEFAULT_GATEWAY_OPTIONS, ...options };
    this.timers = deps.timers ?? realTimers;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.options.maxPayloadBytes,
      perMessageDeflate: false,
      // A client offering only other subprotocols is answered with its first one, so that the
      // handshake completes and the 4406 close that follows reaches it: a browser fails a
      // handshake that answers none of its offers without telling the page why.
      handleProtocols: (protocols) => (protocols.has(REALTIME_SUBPROTOCOL) ? REALTIME_SUBPROTOCOL : (protocols.values().next().value ?? false)),
    });
    this.admission = new AddressAdmission(
      this.options,
      deps.clock,
      deps.viewerCountsAcrossNodes
        ? {
            address: (hash) => this.viewerCounts?.addressElsewhere(hash) ?? 0,
            tenantAddress: (tenantSeq, hash) => this.viewerCounts?.tenantAddressElsewhere(tenantSeq, hash) ?? 0,
          }
        : null,
    );
    const sources = { campaignOf: (tenant: Tenant, broadcastId: string) => deps.events.campaignOf(tenant, broadcastId), content: deps.content, interactions: deps.interactions };
    const rereadAfterMs = deps.claims ? this.options.rereadStoredAfterMs : [];
    this.rooms = new RoomRegistry(sources, this.options.throttleMs, deps.clock, this.timers, (tenantSeq, broadcastId) => this.viewerCounts?.elsewhere(tenantSeq, broadcastId) ?? 0, rereadAfterMs);
    // Before the viewer counts, which publish this node's sockets at once.
    this.sessions = new SessionRegistry({
      rooms: this.rooms,
      clock: deps.clock,
      timers: this.timers,
      resumeGraceMs: this.options.resumeGraceMs,
      leftWithoutNotice: (session, reason) => this.leftWithoutNotice(session, reason),
      ended: (session) => this.across?.ended(session),
      userBound: (session, polls) => void this.interactions.bindUser(session, polls),
    });
    this.viewerCounts = deps.viewerCountsAcrossNodes
      ? new ClusterViewerCounts({
          bus: deps.bus,
          timers: this.timers,
          clock: deps.clock,
          intervalMs: this.options.viewerCountIntervalMs,
          countsHere: () => this.rooms.countsHere(),
          socketsHere: () => ({ tenants: this.sessions.slotsTaken(), ...this.admission.heavyAddresses(this.options.maxConnectionsPerTenant) }),
          changed: (tenantSeq, broadcastId) => this.rooms.viewersChangedElsewhere(tenantSeq, broadcastId),
          sessionsUnsure: () => this.across?.sessionsUnsure() ?? false,
        })
      : null;
    this.across =
      deps.sessionDirectory && this.viewerCounts
        ? new SessionsAcrossNodes({
            directory: deps.sessionDirectory,
            bus: deps.bus,
            nodes: this.viewerCounts,
            timers: this.timers,
            clock: deps.clock,
            resumeGraceMs: this.options.resumeGraceMs,
            movedAway: (tenantSeq, sessionId, broadcastId) => this.sessions.moveAway(tenantSeq, sessionId, broadcastId),
            log: deps.log,
          })
        : null;
    this.writes = new IngestCoalescer(deps.events);
    this.interactions = new Interactions({ events: deps.events, writes: this.writes, rooms: this.rooms, clock: deps.clock, log: deps.log, claims: deps.claims });
    this.heartbeat = setInterval(() => this.beat(), this.options.heartbeatIntervalMs);
    this.heartbeat.unref();
    const unsubscribe = subscribeGateway(deps.bus, this);
    const withdraw = deps.liveViewers?.provide(gatewayViewerCounts(this));
    this.unsubscribe = () => {
      unsubscribe();
      withdraw?.();
    };
  }

  /** Live viewers of a broadcast on this node. */
  viewerCount(tenantSeq: number, broadcastId: string): Promise<number> {
    return this.rooms.viewerCount(tenantSeq, broadcastId);
  }

  /**
   * Viewers connected now to this tenant's broadcasts that match (campaign, broadcast) and,
   * when given, whose country is `country`. Across nodes, the other nodes' viewers count too,
   * by country as far as their counts list it (the largest `MAX_COUNTRIES_PER_ROOM_COUNT`
   * countries of each broadcast on each node).
   */
  async liveViewers(tenantSeq: number, match: (broadcastId: string, campaignId: number) => boolean, country?: string): Promise<number> {
    let count = 0;
    const elsewhere = country === undefined ? this.viewerCounts?.elsewhereOf(tenantSeq) : this.viewerCounts?.elsewhereOfCountry(tenantSeq, country);
    for (const room of elsewhere ?? []) if (match(room.broadcastId, room.campaignId)) count += room.viewers;
    for await (const room of this.rooms.roomsOf(tenantSeq)) {
      if (!match(room.broadcastId, room.campaignId)) continue;
      if (country === undefined) count += room.connections.size;
      else for (const connection of room.connections) if (connection.session.country === country) count++;
    }
    return count;
  }

  /** Viewers connected now to each of this tenant's broadcasts that has any (across nodes, on every node). */
  async liveViewersByBroadcast(tenantSeq: number): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const room of this.viewerCounts?.elsewhereOf(tenantSeq) ?? []) counts.set(room.broadcastId, room.viewers);
    for await (const room of this.rooms.roomsOf(tenantSeq)) {
      if (room.connections.size === 0) continue;
      counts.set(room.broadcastId, (counts.get(room.broadcastId) ?? 0) + room.connections.size);
    }
    return counts;
  }

  /** Open sockets counted against a client address (IPv6: its /64). */
  openConnectionsOf(clientAddress: string): number {
    return this.admission.openConnections(clientAddress);
  }

  /** A `broadcast.left` of this session was stored (e.g. sent over HTTP by the SDK): the server writes none. */
  noteClientLeft(tenantSeq: number, sessionId: string): void {
    this.sessions.noteClientLeft(tenantSeq, sessionId);
  }

  /** The live connection of a session on this gateway, if any. */
  connectionOf(tenantSeq: number, sessionId: string): Connection | null {
    return this.sessions.connectionOf(tenantSeq, sessionId);
  }

  /** Whether a broadcast's room is open (or opening) on this gateway: only then do its stored votes count here. */
  hasRoom(tenantSeq: number, broadcastId: string): boolean {
    return this.rooms.has(tenantSeq, broadcastId);
  }

  /**
   * Stored `poll.voted` events (over HTTP, in `track` messages, or this gateway's own) count in
   * the live results of their room by the same rule as a rebuilt room's; the room's own votes
   * are already counted and count once.
   */
  noteVotes(tenantSeq: number, votes: StoredVote[]): Promise<void> {
    return this.rooms.noteVotes(tenantSeq, votes);
  }

  /** Stored `contest.entered` events (by any path, on any node) are recorded in their room, so that welcomes list them. */
  noteEntries(tenantSeq: number, entries: StoredEntry[]): Promise<void> {
    return this.rooms.noteEntries(tenantSeq, entries);
  }

  /** An overlay of a broadcast was shown, updated or hidden: its room (if loaded here) tells its viewers. */
  applyContentChange(tenantSeq: number, broadcastId: string, change: ContentChange): void {
    this.rooms.applyContentChange(tenantSeq, broadcastId, change);
  }

  /** Takes over an HTTP upgrade on `WS_PATH`; other paths are refused. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== WS_PATH || this.closing) {
      socket.end(`HTTP/1.1 ${this.closing ? '503 Service Unavailable' : '404 Not Found'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const decision = this.admission.admit(this.deps.clientAddress?.(request) ?? request.socket.remoteAddress ?? '');
    if (!decision.admitted) {
      this.deps.refused?.(decision.reason);
      refuseUpgrade(socket, decision.retryAfterSeconds, decision.detail);
      return;
    }
    const { ticket } = decision;
    socket.once('close', () => ticket.release());
    this.wss.handleUpgrade(request, socket, head, (ws) => void this.accept(ws, request, url.searchParams, ticket));
  }

  /** Closes every connection (1001), stops timers and waits for events still being written. */
  async close(): Promise<void> {
    this.closing = true;
    this.unsubscribe();
    this.viewerCounts?.stop();
    clearInterval(this.heartbeat);
    this.rooms.close();
    this.sessions.close();
    for (const ws of this.wss.clients) ws.terminate();
    await Promise.allSettled([...this.pendingWrites, this.across?.stop()]);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  private async accept(ws: WebSocket, request: IncomingMessage, params: URLSearchParams, ticket: AdmissionTicket): Promise<void> {
    // Messages that arrive while the connection is being set up wait for it.
    const early: RawData[] = [];
    const buffer = (data: RawData) => early.push(data);
    ws.on('message', buffer);
    ws.on('error', () => undefined);

    const refuse = (code: number, reason: string) => ws.close(code, reason);
    const admission = await admitViewer(ws.protocol, request, params, ticket, {
      authenticate: (apiKey) => this.deps.authenticate(apiKey),
      maxConnectionsPerTenant: this.options.maxConnectionsPerTenant,
      // Across nodes, the other nodes' sockets of the tenant take their part of the cap.
      takeSlot: (tenantSeq, max) => this.sessions.takeSlot(tenantSeq, max - (this.viewerCounts?.connectionsElsewhere(tenantSeq) ?? 0)),
    });
    if (!admission.admitted) {
      if (admission.refusal) this.deps.refused?.(admission.refusal);
      return refuse(admission.code, admission.reason);
    }
    const { tenant, apiKey, sessionId, contentId, userId } = admission.viewer;
    const releaseSlot = (): void => this.sessions.releaseSlot(tenant.seq);
    if (ws.readyState !== ws.OPEN || this.closing) return releaseSlot();

    // A session this node does not hold may be open on another node (full cluster mode).
    let elsewhere: FoundSession | null = null;
    if (this.across && !this.sessions.has(tenant.seq, sessionId)) {
      elsewhere = await this.across.resumable(tenant.seq, sessionId, contentId);
      if (ws.readyState !== ws.OPEN || this.closing) return releaseSlot();
    }

    let room: Room;
    try {
      // A room released while this connection waited for it is opened afresh.
      do room = await this.rooms.open(tenant, contentId);
      while (room.released);
    } catch (error) {
      releaseSlot();
      this.deps.log.error({ err: error }, 'could not open room');
      return refuse(1011, 'internal_error');
    }
    if (ws.readyState !== ws.OPEN) {
      releaseSlot();
      return this.rooms.release(room);
    }

    // The session resumes here only if this node's compare-and-set of its record wins (else the
    // other node ended it meanwhile: a new session). One that reached this node meanwhile (another
    // socket of the viewer) is resumed here.
    let movedRevision: number | null = null;
    if (elsewhere !== null && this.across && !this.sessions.has(tenant.seq, sessionId)) movedRevision = await this.across.takeOver(tenant.seq, sessionId, elsewhere);
    const moved = elsewhere !== null && movedRevision !== null && !this.sessions.has(tenant.seq, sessionId) ? elsewhere.session : undefined;
    const { session, resumed } = this.sessions.join(tenant, sessionId, userId, room, () => this.deps.country(request, tenant), moved);
    if (moved && movedRevision !== null) this.across?.resumed(session, movedRevision);
    else if (!resumed) this.across?.started(session);
    const connection = new Connection(
      ws,
      session,
      apiKey,
      { softBufferBytes: this.options.softBufferBytes, hardBufferBytes: this.options.hardBufferBytes },
      new MessageBudget(this.options, this.deps.clock.now()),
    );
    this.sessions.connect(session, connection);

    ws.off('message', buffer);
    ws.on('message', (data, isBinary) => this.onMessage(connection, data, isBinary));
    ws.on('pong', () => (connection.alive = true));
    ws.on('close', (code) => this.sessions.closed(connection, code, this.closing));
    // Closed while its session was taken over from another node: it waits for its viewer here.
    if ((ws.readyState as number) === ws.CLOSED) this.sessions.closed(connection, 1006, this.closing);

    connection.send(
      frame({
        type: 'welcome',
        protocol: REALTIME_SUBPROTOCOL,
        session: { id: sessionId, resumed },
        broadcast: { id: room.broadcastId, campaignId: room.campaignId },
        overlays: room.activeOverlays(),
        pollResults: room.activeResults(),
        viewer: room.viewerState(session.viewer, session.id, session.userId),
        viewers: this.rooms.welcomeCount(room),
        serverTime: new Date(this.deps.clock.now()).toISOString(),
        heartbeatIntervalMs: this.options.heartbeatIntervalMs,
      }),
    );
    this.rooms.viewersChanged(room);
    for (const data of early) this.onMessage(connection, data, false);
  }

  /**
   * Closes every connection opened with this (now revoked) API key with 4401: the viewer's
   * session ends as after any lost connection, since a reconnect with the key is refused.
   */
  disconnectApiKey(tenantSeq: number, apiKey: string): number {
    return this.sessions.disconnectApiKey(tenantSeq, apiKey);
  }

  /**
   * Takes an erased user's identity out of their sessions, connected or within their grace
   * period: later events of these sessions (votes, entries, tracked events, the server's
   * `broadcast.left`) carry no userId. Resolves once the votes, entries and `broadcast.left`
   * written before have reached ingest and been answered, so that the erasure runs after them.
   */
  forgetUser(tenantSeq: number, isUser: (userId: string) => boolean): Promise<void> {
    this.sessions.forgetUser(tenantSeq, isUser);
    return this.writes.settled();
  }

  /**
   * A session ended without the client's own `broadcast.left`: writes one; across nodes, once its
   * record is removed, and not when the session moved to another node meanwhile.
   */
  private leftWithoutNotice(session: Session, reason: LeaveReason): void {
    if (!this.across) return this.writeLeft(session, reason);
    const endedAt = this.deps.clock.now();
    this.track(this.across.leftMayBeWritten(session).then((allowed) => allowed && this.writeLeft(session, reason, endedAt)));
  }

  /** Writes the `broadcast.left` of a session that ended (at `now`) without the client's own. */
  private writeLeft(session: Session, reason: LeaveReason, now = this.deps.clock.now()): void {
    this.track(this.writes.write({
      tenant: session.tenant,
      source: 'server',
      country: session.country,
      event: {
        event: 'broadcast.left',
        eventId: uuidv7(),
        userId: session.userId,
        sessionId: session.id,
        broadcastId: session.room.broadcastId,
        timestamp: new Date(now).toISOString(),
        data: { reason, watchedMs: Math.max(0, (session.disconnectedAt ?? now) - session.joinedAt) },
      },
    }));
  }

  private onMessage(connection: Connection, data: RawData, isBinary: boolean): void {
    if (!connection.admitMessage(this.deps.clock.now(), () => this.deps.refused?.('message_rate'))) return;
    let message: Record<string, unknown>;
    const text = isBinary ? '' : String(data);
    try {
      if (isBinary) throw new Error('binary');
      // The protocol's rule for outside text: a lone surrogate in any string or key becomes U+FFFD.
      // (Query parameters such as contentId are URLSearchParams values, well-formed by definition.)
      const parsed: unknown = parseClientJson(text);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || typeof (parsed as { type?: unknown }).type !== 'string') {
        throw new Error('shape');
      }
      message = parsed as Record<string, unknown>;
    } catch {
      return reply(connection, { type: 'error', code: 'invalid_message', detail: 'Each message is one JSON text frame: an object with a "type".' });
    }
    const requestId = typeof message.requestId === 'string' && REQUEST_ID.test(message.requestId) ? message.requestId : undefined;
    switch (message.type) {
      case 'ping':
        return reply(connection, { type: 'pong', serverTime: new Date(this.deps.clock.now()).toISOString(), requestId });
      case 'track':
        return void this.track(this.interactions.track(connection, message.events, message.sentAt, requestId, Buffer.byteLength(text)));
      case 'poll.vote':
        return void this.track(this.interactions.vote(connection, message.pollId, message.optionIndex, requestId));
      case 'contest.enter':
        return void this.track(this.interactions.enter(connection, message.contestId, requestId));
      default:
        return reply(connection, {
          type: 'error',
          code: 'unknown_message_type',
          detail: `"${redactText(String(message.type)).slice(0, 40)}" is not a message type of ${REALTIME_SUBPROTOCOL}.`,
          requestId,
        });
    }
  }

  private beat(): void {
    for (const session of this.sessions.values()) session.connection?.heartbeat();
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.pendingWrites.add(promise);
    void promise.finally(() => this.pendingWrites.delete(promise)).catch(() => undefined);
    return promise;
  }
}
