import { createHash } from 'node:crypto';
import { systemClock, type Clock } from '@svc/protocol';

/**
 * How long a record of an open session stays in the directory, ms (24 h): the bucket's max age
 * in NATS. A session older than that which moves to another node starts afresh there (a new
 * session, a second `broadcast.joined`); a record is written again only when its session moves.
 */
export const SESSION_DIRECTORY_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/** Where a viewer's session is open: nothing in it identifies the viewer. */
export interface OpenSession {
  /** The node holding the session (the gateway's node id on the bus). */
  node: string;
  broadcastId: string;
  /** When the session started, ms: a session resumed on another node keeps it. */
  joinedAt: number;
}

/**
 * The directory of viewers' open sessions shared by the nodes: which node holds each one, so that
 * a viewer who reconnects to another node within the grace period resumes the same session.
 * Keys carry no identifier in clear (`sessionDirectoryKey`); records expire after
 * `SESSION_DIRECTORY_MAX_AGE_MS` (or the max age an implementation is given).
 */
export interface SessionDirectory {
  /** Records (or overwrites) where a session is open. */
  record(tenantSeq: number, sessionId: string, session: OpenSession): Promise<void>;
  /** Where the session is open, or null when no record is kept. */
  find(tenantSeq: number, sessionId: string): Promise<OpenSession | null>;
  /**
   * Removes the record when it still is `session` (same node, broadcast and start): a node whose
   * session moved on to another node, or became a new session, leaves the newer record alone.
   */
  remove(tenantSeq: number, sessionId: string, session: OpenSession): Promise<void>;
}

/** The directory's key of a session: the tenant seq, then the SHA-256 of both (base64url). */
export function sessionDirectoryKey(tenantSeq: number, sessionId: string): string {
  return `${tenantSeq}.${createHash('sha256').update(`${tenantSeq}\u0000${sessionId}`).digest('base64url')}`;
}

/** Whether two records name the same session on the same node. */
export function sameOpenSession(a: OpenSession, b: OpenSession): boolean {
  return a.node === b.node && a.broadcastId === b.broadcastId && a.joinedAt === b.joinedAt;
}

/** A directory in this process: for one node, and for tests. */
export class MemorySessionDirectory implements SessionDirectory {
  private readonly records = new Map<string, { session: OpenSession; at: number }>();

  constructor(
    private readonly clock: Clock = systemClock,
    /** Default SESSION_DIRECTORY_MAX_AGE_MS. */
    private readonly maxAgeMs = SESSION_DIRECTORY_MAX_AGE_MS,
  ) {}

  async record(tenantSeq: number, sessionId: string, session: OpenSession): Promise<void> {
    const key = sessionDirectoryKey(tenantSeq, sessionId);
    // Oldest first, as a bucket's max age removes them.
    this.records.delete(key);
    this.records.set(key, { session: { ...session }, at: this.clock.now() });
    this.expire();
  }

  async find(tenantSeq: number, sessionId: string): Promise<OpenSession | null> {
    this.expire();
    const found = this.records.get(sessionDirectoryKey(tenantSeq, sessionId));
    return found ? { ...found.session } : null;
  }

  async remove(tenantSeq: number, sessionId: string, session: OpenSession): Promise<void> {
    const key = sessionDirectoryKey(tenantSeq, sessionId);
    const found = this.records.get(key);
    if (found && sameOpenSession(found.session, session)) this.records.delete(key);
  }

  private expire(): void {
    const oldest = this.clock.now() - this.maxAgeMs;
    for (const [key, { at }] of this.records) {
      if (at > oldest) break;
      this.records.delete(key);
    }
  }
}
