import { CLOSE_CODES, type Clock } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import type { Connection, Session } from './connection';
import type { Room } from './room';
import type { RoomRegistry } from './room-registry';
import type { Timers } from './throttle';

/** Why a session ended, as its server-written `broadcast.left` says. */
export type LeaveReason = 'closed' | 'timeout' | 'disconnect';

export interface SessionRegistryDeps {
  rooms: RoomRegistry;
  clock: Clock;
  timers: Timers;
  /** A session that reconnects within this time, ms, is the same session. */
  resumeGraceMs: number;
  /** A session ended without the client's own `broadcast.left`: the server writes one. */
  leftWithoutNotice(session: Session, reason: LeaveReason): void;
  /** A session ended on this node (not when it moved to another node); none by default. */
  ended?(session: Session): void;
  /** A session that voted took a userId (`polls`: where it voted): that user has voted there too; none by default. */
  userBound?(session: Session, polls: string[]): void;
}

/**
 * The sessions of this node, connected or within their reconnect grace, and each tenant's count
 * of open sockets. A session whose connection is lost waits `resumeGraceMs` for its viewer to
 * come back before it ends.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, Session>();
  private readonly connectionsPerTenant = new Map<number, number>();

  constructor(private readonly deps: SessionRegistryDeps) {}

  /**
   * Takes one of the tenant's `max` socket slots; false when all are taken. Taken before any
   * await, so that concurrent joins cannot all pass the check.
   */
  takeSlot(tenantSeq: number, max: number): boolean {
    const open = this.connectionsPerTenant.get(tenantSeq) ?? 0;
    if (open >= max) return false;
    this.connectionsPerTenant.set(tenantSeq, open + 1);
    return true;
  }

  releaseSlot(tenantSeq: number): void {
    this.connectionsPerTenant.set(tenantSeq, (this.connectionsPerTenant.get(tenantSeq) ?? 1) - 1);
  }

  /** Every tenant's slots taken now (its open sockets, and those being admitted), for the other nodes' caps. */
  slotsTaken(): Array<{ tenantSeq: number; connections: number }> {
    const taken: Array<{ tenantSeq: number; connections: number }> = [];
    for (const [tenantSeq, connections] of this.connectionsPerTenant) if (connections > 0) taken.push({ tenantSeq, connections });
    return taken;
  }

  /** Whether this node holds a session of this id (connected or within its grace). */
  has(tenantSeq: number, sessionId: string): boolean {
    return this.sessions.has(`${tenantSeq}:${sessionId}`);
  }

  /**
   * The session of this id: the same one when it reconnects to the same broadcast in time, or,
   * with `movedFrom`, the session another node held (resumed, its start kept).
   */
  join(
    tenant: Tenant,
    sessionId: string,
    userId: string | null,
    room: Room,
    country: () => string | null,
    movedFrom?: { joinedAt: number },
  ): { session: Session; resumed: boolean } {
    const key = `${tenant.seq}:${sessionId}`;
    const existing = this.sessions.get(key);
    if (existing && existing.room === room) {
      if (existing.graceTimer !== null) this.deps.timers.clearTimeout(existing.graceTimer);
      existing.graceTimer = null;
      existing.disconnectedAt = null;
      // A viewer who signed in meanwhile reconnects with its userId: later votes and entries carry it.
      if (userId !== null && userId !== existing.userId) {
        existing.userId = userId;
        existing.viewer = userId;
        // The session's votes bind the new userId: it cannot vote again under it.
        this.bindUser(existing, userId);
      }
      return { session: existing, resumed: true };
    }
    // Same session id on another broadcast: the viewer switched content.
    if (existing) this.end(existing, existing.leftByClient ? null : 'closed');
    const session: Session = {
      key,
      id: sessionId,
      tenant,
      userId,
      viewer: userId ?? sessionId,
      country: country(),
      room,
      joinedAt: movedFrom?.joinedAt ?? this.deps.clock.now(),
      disconnectedAt: null,
      connection: null,
      graceTimer: null,
      leftByClient: false,
    };
    this.sessions.set(key, session);
    room.sessions++;
    // A session moved in with a userId (maybe one it took meanwhile): its votes bind it, as on a resume here.
    if (movedFrom !== undefined && userId !== null) this.bindUser(session, userId);
    return { session, resumed: movedFrom !== undefined };
  }

  /** The session's connection from now on; one it replaces is closed (4409) and gives its slot back. */
  connect(session: Session, connection: Connection): void {
    const previous = session.connection;
    session.connection = connection;
    if (previous) {
      // The session keeps the slot of the connection it replaces.
      this.releaseSlot(session.tenant.seq);
      session.room.connections.delete(previous);
      previous.close(CLOSE_CODES.replaced, 'replaced');
    }
    session.room.connections.add(connection);
  }

  /** A connection closed: its session waits for a reconnect (unless the client left, or the gateway closes). */
  closed(connection: Connection, code: number, gatewayClosing: boolean): void {
    const { session } = connection;
    if (session.connection !== connection) {
      // Replaced by a newer connection, or its session already ended (content switch).
      session.room.connections.delete(connection);
      this.deps.rooms.release(session.room);
      return;
    }
    session.connection = null;
    session.disconnectedAt = this.deps.clock.now();
    const room = session.room;
    room.connections.delete(connection);
    this.releaseSlot(session.tenant.seq);
    this.deps.rooms.viewersChanged(room);
    if (gatewayClosing) return;
    if (session.leftByClient) {
      this.end(session, null);
      return;
    }
    const reason = connection.heartbeatTimedOut ? 'timeout' : code === 1000 || code === 1001 ? 'closed' : 'disconnect';
    session.graceTimer = this.deps.timers.setTimeout(() => {
      session.graceTimer = null;
      // The client's own broadcast.left may have arrived meanwhile (over HTTP, or late).
      this.end(session, session.leftByClient ? null : reason);
    }, this.deps.resumeGraceMs);
  }

  /** A `broadcast.left` of this session was stored (e.g. sent over HTTP by the SDK): the server writes none. */
  noteClientLeft(tenantSeq: number, sessionId: string): void {
    const session = this.sessions.get(`${tenantSeq}:${sessionId}`);
    if (session) session.leftByClient = true;
  }

  /**
   * Closes every connection opened with this (now revoked) API key with 4401: the viewer's
   * session ends as after any lost connection, since a reconnect with the key is refused.
   */
  disconnectApiKey(tenantSeq: number, apiKey: string): number {
    let closed = 0;
    for (const session of this.sessions.values()) {
      const connection = session.connection;
      if (session.tenant.seq !== tenantSeq || connection?.apiKey !== apiKey) continue;
      connection.close(CLOSE_CODES.invalidApiKey, 'invalid_api_key');
      closed++;
    }
    return closed;
  }

  /** Takes an erased user's identity out of their sessions, connected or within their grace period. */
  forgetUser(tenantSeq: number, isUser: (userId: string) => boolean): void {
    for (const session of this.sessions.values()) {
      if (session.tenant.seq === tenantSeq && session.userId !== null && isUser(session.userId)) session.userId = null;
    }
  }

  /**
   * The session resumed on another node: it is dropped here without a `broadcast.left` (that
   * node writes it when the session ends), its socket, if still open, closed as replaced (4409).
   */
  moveAway(tenantSeq: number, sessionId: string, broadcastId: string): void {
    const session = this.sessions.get(`${tenantSeq}:${sessionId}`);
    if (session?.room.broadcastId === broadcastId) this.end(session, null, true);
  }

  private bindUser(session: Session, userId: string): void {
    const polls = session.room.bindUser(session.id, userId);
    if (polls.length) this.deps.userBound?.(session, polls);
  }

  /** Every session, connected or within its grace. */
  values(): IterableIterator<Session> {
    return this.sessions.values();
  }

  /** The live connection of a session, if any. */
  connectionOf(tenantSeq: number, sessionId: string): Connection | null {
    return this.sessions.get(`${tenantSeq}:${sessionId}`)?.connection ?? null;
  }

  /** The gateway closes: grace timers stop and every connection is closed with 1001. */
  close(): void {
    for (const session of this.sessions.values()) {
      if (session.graceTimer !== null) this.deps.timers.clearTimeout(session.graceTimer);
      session.connection?.close(CLOSE_CODES.goingAway, 'server_shutdown');
    }
  }

  /**
   * Forgets a session; has its `broadcast.left` written when the client did not write one. A
   * session that `moved` to another node did not end: its socket closes as replaced, and it stays
   * in the directory of sessions.
   */
  private end(session: Session, reason: LeaveReason | null, moved = false): void {
    if (this.sessions.get(session.key) !== session) return;
    this.sessions.delete(session.key);
    if (session.graceTimer !== null) this.deps.timers.clearTimeout(session.graceTimer);
    const connection = session.connection;
    if (connection) {
      // The viewer moved on (content switch, or to another node): its old socket closes.
      session.connection = null;
      session.room.connections.delete(connection);
      this.releaseSlot(session.tenant.seq);
      if (moved) connection.close(CLOSE_CODES.replaced, 'replaced');
      else connection.close(1000, 'session_ended');
      this.deps.rooms.viewersChanged(session.room);
    }
    session.room.sessions--;
    if (!moved) this.deps.ended?.(session);
    if (reason) this.deps.leftWithoutNotice(session, reason);
    this.deps.rooms.release(session.room);
  }
}
