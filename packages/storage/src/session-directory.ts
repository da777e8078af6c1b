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

/** A record as found in the directory, with its revision (which grows with every write of any key). */
export interface FoundSession {
  session: OpenSession;
  revision: number;
}

/**
 * What became of a record its node removed: `removed` (it was this node's and is gone now),
 * `gone` (no record of this session any more: it expired, was never written, or a newer session
 * of the id replaced it), or `moved` (another node resumed the session: the record names that
 * node, with the session's start and broadcast).
 */
export type SessionRemoval = 'removed' | 'gone' | 'moved';

/**
 * The directory of viewers' open sessions shared by the nodes: which node holds each one, so that
 * a viewer who reconnects to another node within the grace period resumes the same session.
 * Keys carry no identifier in clear (`sessionDirectoryKey`); records expire after
 * `SESSION_DIRECTORY_MAX_AGE_MS` (or the max age an implementation is given).
 *
 * A session moves by a compare-and-set (`move` at the revision found) and its node removes it by
 * a compare-and-delete, so that of a node ending a session and another resuming it, one wins.
 */
export interface SessionDirectory {
  /** Records (or overwrites) where a session is open; the record's revision. */
  record(tenantSeq: number, sessionId: string, session: OpenSession): Promise<number>;
  /** Where the session is open, or null when no record is kept. */
  find(tenantSeq: number, sessionId: string): Promise<FoundSession | null>;
  /**
   * Names `session` (another node) as the session's holder if the record still is at `revision`:
   * the new revision, or null when the record changed or went meanwhile.
   */
  move(tenantSeq: number, sessionId: string, session: OpenSession, revision: number): Promise<number | null>;
  /**
   * Removes the record when it still is `session` (same node, broadcast and start): a record
   * naming another node with the same broadcast and start (the session moved there) stays, and
   * so does a newer session's. With the `revision` this node wrote, the record is deleted only
   * while it still is that revision, without reading it first (a read may come from a replica
   * that has not seen the write yet).
   */
  remove(tenantSeq: number, sessionId: string, session: OpenSession, revision?: number | null): Promise<SessionRemoval>;
}

/** The directory's key of a session: the tenant seq, then the SHA-256 of both (base64url). */
export function sessionDirectoryKey(tenantSeq: number, sessionId: string): string {
  return `${tenantSeq}.${createHash('sha256').update(`${tenantSeq}\u0000${sessionId}`).digest('base64url')}`;
}

/** Whether two records name the same session on the same node. */
export function sameOpenSession(a: OpenSession, b: OpenSession): boolean {
  return a.node === b.node && a.broadcastId === b.broadcastId && a.joinedAt === b.joinedAt;
}

/** What `remove` makes of the record found (null: none) when it removes `session`: delete it, or say why not. */
export function removalOf(found: OpenSession | null, session: OpenSession): SessionRemoval | 'delete' {
  if (!found) return 'gone';
  if (sameOpenSession(found, session)) return 'delete';
  // A move keeps the session's broadcast and start: only another node's record of them is a move.
  return found.broadcastId === session.broadcastId && found.joinedAt === session.joinedAt ? 'moved' : 'gone';
}

/** A directory in this process: for one node, and for tests. */
export class MemorySessionDirectory implements SessionDirectory {
  private readonly records = new Map<string, { session: OpenSession; at: number; revision: number }>();
  private revision = 0;

  constructor(
    private readonly clock: Clock = systemClock,
    /** Default SESSION_DIRECTORY_MAX_AGE_MS. */
    private readonly maxAgeMs = SESSION_DIRECTORY_MAX_AGE_MS,
  ) {}

  async record(tenantSeq: number, sessionId: string, session: OpenSession): Promise<number> {
    return this.write(sessionDirectoryKey(tenantSeq, sessionId), session);
  }

  async find(tenantSeq: number, sessionId: string): Promise<FoundSession | null> {
    this.expire();
    const found = this.records.get(sessionDirectoryKey(tenantSeq, sessionId));
    return found ? { session: { ...found.session }, revision: found.revision } : null;
  }

  async move(tenantSeq: number, sessionId: string, session: OpenSession, revision: number): Promise<number | null> {
    this.expire();
    const key = sessionDirectoryKey(tenantSeq, sessionId);
    if (this.records.get(key)?.revision !== revision) return null;
    return this.write(key, session);
  }

  async remove(tenantSeq: number, sessionId: string, session: OpenSession, revision?: number | null): Promise<SessionRemoval> {
    this.expire();
    const key = sessionDirectoryKey(tenantSeq, sessionId);
    const found = this.records.get(key);
    if (revision != null && found?.revision === revision) {
      this.records.delete(key);
      return 'removed';
    }
    const removal = removalOf(found?.session ?? null, session);
    if (removal !== 'delete') return removal;
    this.records.delete(key);
    return 'removed';
  }

  private write(key: string, session: OpenSession): number {
    // Oldest first, as a bucket's max age removes them.
    this.records.delete(key);
    this.records.set(key, { session: { ...session }, at: this.clock.now(), revision: ++this.revision });
    this.expire();
    return this.revision;
  }

  private expire(): void {
    const oldest = this.clock.now() - this.maxAgeMs;
    for (const [key, { at }] of this.records) {
      if (at > oldest) break;
      this.records.delete(key);
    }
  }
}
