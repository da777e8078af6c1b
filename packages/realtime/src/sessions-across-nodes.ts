import { fanOut, type Bus, type Clock } from '@svc/protocol';
import { SESSION_DIRECTORY_MAX_AGE_MS, type FoundSession, type OpenSession, type SessionDirectory } from '@svc/storage';
import type { Session } from './connection';
import type { Timers } from './throttle';

/** How long a join waits for the directory before it starts a new session (and any other request to it may take), ms. */
export const SESSION_LOOKUP_TIMEOUT_MS = 1_000;
/** The first pause before a failed write (a record, a removal) to the directory is tried again, ms; it doubles up to `REMOVAL_RETRY_MAX_MS`. */
export const REMOVAL_RETRY_FIRST_MS = 1_000;
export const REMOVAL_RETRY_MAX_MS = 60_000;

export interface SessionsAcrossNodesDeps {
  directory: SessionDirectory;
  bus: Bus;
  /**
   * This node's id on the bus, how long another node has been gone (0: alive; null: never heard
   * of), and whether another node said, when last heard of, that its records may outlive their sessions.
   */
  nodes: { readonly node: string; silentForMs(node: string): number | null; sessionsUnsure(node: string): boolean };
  timers: Timers;
  clock: Clock;
  /** A session whose node vanished longer ago than this, ms, is not resumed. */
  resumeGraceMs: number;
  /** Drops, without a `broadcast.left`, a session of this node that another node resumed. */
  movedAway(tenantSeq: number, sessionId: string, broadcastId: string): void;
  log: { warn(obj: object, msg: string): void };
  /** Default SESSION_LOOKUP_TIMEOUT_MS. */
  lookupTimeoutMs?: number;
  /** How long a failed removal is tried again, ms: the directory's max age (default SESSION_DIRECTORY_MAX_AGE_MS), after which the record is gone anyway. */
  removalRetryForMs?: number;
}

/** A session of this node, and the revision of its record (null until its record is written, or when writing it failed). */
interface Held {
  session: Session;
  revision: number | null;
}

/**
 * Sessions that move between nodes (full cluster mode): this node records its sessions in the
 * shared directory when they start (without delaying the viewer's `welcome`) and removes them
 * when they end here; a join of a session this node does not hold looks it up, and resumes the
 * session another node held when that node is alive, or vanished less than the grace period ago.
 *
 * The handoff is a compare-and-set: the joining node resumes only if its `move` of the record,
 * at the revision it found, succeeds; the node ending a session compare-deletes its record first
 * and writes `broadcast.left` only when the record was still its own (or already gone), not when
 * it moved. So of the two, one wins. The node that held it is told on the bus (`session.moved`,
 * with the record's revision) and drops it without writing `broadcast.left`.
 *
 * A removal that fails (the directory does not answer) still has the `broadcast.left` written and
 * is tried again in the background; meanwhile this node says in its viewer counts that its
 * records may outlive their sessions (`sessionsUnsure`), and no other node resumes any of them:
 * the tolerance is a lost resume, never a session counted on two nodes. A directory that fails
 * or is slow on a join only costs the resume: a new session.
 */
export class SessionsAcrossNodes {
  /** Directory writes of each session, in order (a session's removal never overtakes its record). */
  private readonly writes = new Map<string, Promise<unknown>>();
  private readonly held = new Map<string, Held>();
  /** Whether each ended session's `broadcast.left` may be written: false when the session moved away meanwhile. */
  private readonly leftAllowed = new WeakMap<Session, Promise<boolean>>();
  /** Removals that failed and are tried again. */
  private readonly retries = new Set<unknown>();
  /** Records that failed and are written again. */
  private readonly recordRetries = new Set<unknown>();
  private readonly unsubscribe: () => void;
  private readonly lookupTimeoutMs: number;
  private stopped = false;

  constructor(private readonly deps: SessionsAcrossNodesDeps) {
    this.lookupTimeoutMs = deps.lookupTimeoutMs ?? SESSION_LOOKUP_TIMEOUT_MS;
    this.unsubscribe = deps.bus.subscribe('session.moved', (moved) => this.movedElsewhere(moved));
  }

  /** The session another node holds that a join of this broadcast here may resume (`takeOver`), or null: a new session. */
  async resumable(tenantSeq: number, sessionId: string, broadcastId: string): Promise<FoundSession | null> {
    let found: FoundSession | null;
    try {
      found = await this.withinTimeout(this.deps.directory.find(tenantSeq, sessionId));
    } catch (error) {
      this.deps.log.warn({ err: error }, 'looking up a session in the directory failed: it starts afresh');
      return null;
    }
    if (!found || found.session.broadcastId !== broadcastId || found.session.node === this.deps.nodes.node) return null;
    const goneForMs = this.deps.nodes.silentForMs(found.session.node);
    if (goneForMs === null || goneForMs >= this.deps.resumeGraceMs) return null;
    // A node whose removals failed (when last heard of) may have ended this session already.
    if (this.deps.nodes.sessionsUnsure(found.session.node)) return null;
    return found;
  }

  /** Names this node as the holder of a session found by `resumable`: its record's new revision, or null when it changed meanwhile (a new session). */
  async takeOver(tenantSeq: number, sessionId: string, found: FoundSession): Promise<number | null> {
    const session: OpenSession = { ...found.session, node: this.deps.nodes.node };
    try {
      return await this.withinTimeout(this.deps.directory.move(tenantSeq, sessionId, session, found.revision));
    } catch (error) {
      this.deps.log.warn({ err: error }, 'moving a session in the directory failed: it starts afresh');
      return null;
    }
  }

  /** A session started here. */
  started(session: Session): void {
    const held: Held = { session, revision: null };
    this.held.set(session.key, held);
    this.recordHeld(held, REMOVAL_RETRY_FIRST_MS);
  }

  /**
   * Writes the record of a session held here; one that failed is written again while the session
   * is held (a write that timed out may still land late: the next one, sent after it on the same
   * connection, gives the revision that the session's removal compare-deletes).
   */
  private recordHeld(held: Held, pauseMs: number): void {
    const { session } = held;
    this.write(session.key, async () => {
      try {
        held.revision = await this.withinTimeout(this.deps.directory.record(session.tenant.seq, session.id, this.recordOf(session)));
      } catch (error) {
        if (!this.stopped) {
          const retry = this.deps.timers.setTimeout(() => {
            this.recordRetries.delete(retry);
            if (this.held.get(session.key) === held && held.revision === null) this.recordHeld(held, Math.min(2 * pauseMs, REMOVAL_RETRY_MAX_MS));
          }, pauseMs);
          this.recordRetries.add(retry);
        }
        throw error;
      }
    });
  }

  /** A session another node held resumed here (`takeOver` gave `revision`): the other node drops it. */
  resumed(session: Session, revision: number): void {
    this.held.set(session.key, { session, revision });
    fanOut(this.deps.bus, 'session.moved', { tenantSeq: session.tenant.seq, sessionId: session.id, broadcastId: session.room.broadcastId, node: this.deps.nodes.node, revision });
  }

  /** A session ended here (not moved away): its record is removed (`leftMayBeWritten`). */
  ended(session: Session): void {
    const held = this.held.get(session.key);
    if (held?.session === session) this.held.delete(session.key);
    // The revision is read once the record's own write is done.
    const removed = this.write(session.key, () => this.remove(session, held?.session === session ? held : null));
    this.leftAllowed.set(session, removed.then((allowed) => allowed !== false));
  }

  /**
   * Whether this node may write the `broadcast.left` of a session that ended here: false when the
   * directory says the session moved to another node; true when its record was removed or gone,
   * or the directory did not answer (the removal is then tried again, see `sessionsUnsure`).
   */
  leftMayBeWritten(session: Session): Promise<boolean> {
    return this.leftAllowed.get(session) ?? Promise.resolve(true);
  }

  /** Whether records of this node may outlive their sessions: a removal failed and is tried again. */
  sessionsUnsure(): boolean {
    return this.retries.size > 0;
  }

  /** Stops following moves and retrying removals, and waits for the directory writes under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    for (const retry of [...this.retries, ...this.recordRetries]) this.deps.timers.clearTimeout(retry);
    this.retries.clear();
    this.recordRetries.clear();
    await Promise.allSettled([...this.writes.values()]);
  }

  private movedElsewhere({ tenantSeq, sessionId, broadcastId, node, revision }: { tenantSeq: number; sessionId: string; broadcastId: string; node: string; revision: number }): void {
    if (node === this.deps.nodes.node) return;
    const held = this.held.get(`${tenantSeq}:${sessionId}`);
    if (!held || held.session.room.broadcastId !== broadcastId) return;
    // Held here from a later record: the session moved back, and this message is late or repeated.
    if (held.revision !== null && held.revision >= revision) return;
    this.held.delete(held.session.key);
    this.deps.movedAway(tenantSeq, sessionId, broadcastId);
  }

  /** Removes the record of a session that ended here: false when it moved to another node. */
  private async remove(session: Session, held: Held | null): Promise<boolean> {
    try {
      return (await this.withinTimeout(this.deps.directory.remove(session.tenant.seq, session.id, this.recordOf(session), held?.revision))) !== 'moved';
    } catch (error) {
      this.deps.log.warn({ err: error }, 'removing a session from the directory failed: trying again');
      this.retryRemoval(session, held?.revision ?? null, this.deps.clock.now() + (this.deps.removalRetryForMs ?? SESSION_DIRECTORY_MAX_AGE_MS), REMOVAL_RETRY_FIRST_MS);
      return true;
    }
  }

  private retryRemoval(session: Session, revision: number | null, untilMs: number, pauseMs: number): void {
    if (this.stopped || this.deps.clock.now() + pauseMs > untilMs) return;
    const retry = this.deps.timers.setTimeout(() => {
      this.write(session.key, async () => {
        try {
          await this.withinTimeout(this.deps.directory.remove(session.tenant.seq, session.id, this.recordOf(session), revision));
        } catch {
          this.retryRemoval(session, revision, untilMs, Math.min(2 * pauseMs, REMOVAL_RETRY_MAX_MS));
        } finally {
          this.retries.delete(retry);
        }
      });
    }, pauseMs);
    this.retries.add(retry);
  }

  private recordOf(session: Session): OpenSession {
    return { node: this.deps.nodes.node, broadcastId: session.room.broadcastId, joinedAt: session.joinedAt };
  }

  /** Runs a directory write of a session after its earlier ones; its outcome, or undefined when it failed (logged). */
  private write<T>(key: string, job: () => Promise<T>): Promise<T | undefined> {
    const previous = this.writes.get(key) ?? Promise.resolve();
    const next = previous.then(job).catch((error: unknown) => {
      this.deps.log.warn({ err: error }, 'writing a session to the directory failed');
      return undefined;
    });
    this.writes.set(key, next);
    void next.then(() => {
      if (this.writes.get(key) === next) this.writes.delete(key);
    });
    return next;
  }

  private withinTimeout<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.deps.timers.setTimeout(() => reject(new Error(`no answer within ${this.lookupTimeoutMs} ms`)), this.lookupTimeoutMs);
      promise.then(
        (value) => {
          this.deps.timers.clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          this.deps.timers.clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
}
