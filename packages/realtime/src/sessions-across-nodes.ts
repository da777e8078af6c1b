import { fanOut, type Bus } from '@svc/protocol';
import type { OpenSession, SessionDirectory } from '@svc/storage';
import type { Session } from './connection';
import type { Timers } from './throttle';

/** How long a join waits for the directory before it starts a new session, ms. */
export const SESSION_LOOKUP_TIMEOUT_MS = 1_000;

export interface SessionsAcrossNodesDeps {
  directory: SessionDirectory;
  bus: Bus;
  /** This node's id on the bus, and how long another node has been gone (0: alive; null: never heard of). */
  nodes: { readonly node: string; silentForMs(node: string): number | null };
  timers: Timers;
  /** A session whose node vanished longer ago than this, ms, is not resumed. */
  resumeGraceMs: number;
  /** Drops, without a `broadcast.left`, a session of this node that another node resumed. */
  movedAway(tenantSeq: number, sessionId: string, broadcastId: string): void;
  log: { warn(obj: object, msg: string): void };
  /** Default SESSION_LOOKUP_TIMEOUT_MS. */
  lookupTimeoutMs?: number;
}

/**
 * Sessions that move between nodes (full cluster mode): this node records its sessions in the
 * shared directory when they start (without delaying the viewer's `welcome`) and removes them
 * when they end here; a join of a session this node does not hold looks it up, and resumes the
 * session another node held when that node is alive, or vanished less than the grace period ago.
 * The node that held it is told on the bus (`session.moved`) and drops it without writing
 * `broadcast.left`. A directory that fails or is slow only costs the resume: a new session.
 */
export class SessionsAcrossNodes {
  /** Directory writes of each session, in order (a session's removal never overtakes its record). */
  private readonly writes = new Map<string, Promise<void>>();
  private readonly unsubscribe: () => void;
  private readonly lookupTimeoutMs: number;

  constructor(private readonly deps: SessionsAcrossNodesDeps) {
    this.lookupTimeoutMs = deps.lookupTimeoutMs ?? SESSION_LOOKUP_TIMEOUT_MS;
    this.unsubscribe = deps.bus.subscribe('session.moved', ({ tenantSeq, sessionId, broadcastId, node }) => {
      if (node !== deps.nodes.node) deps.movedAway(tenantSeq, sessionId, broadcastId);
    });
  }

  /** The session another node holds that a join of this broadcast here resumes, or null: a new session. */
  async resumable(tenantSeq: number, sessionId: string, broadcastId: string): Promise<OpenSession | null> {
    let found: OpenSession | null;
    try {
      found = await this.withinTimeout(this.deps.directory.find(tenantSeq, sessionId));
    } catch (error) {
      this.deps.log.warn({ err: error }, 'looking up a session in the directory failed: it starts afresh');
      return null;
    }
    if (!found || found.broadcastId !== broadcastId || found.node === this.deps.nodes.node) return null;
    const goneForMs = this.deps.nodes.silentForMs(found.node);
    return goneForMs !== null && goneForMs < this.deps.resumeGraceMs ? found : null;
  }

  /** A session started here. */
  started(session: Session): void {
    this.write(session, () => this.deps.directory.record(session.tenant.seq, session.id, this.recordOf(session)));
  }

  /** A session another node held resumed here: the directory names this node, and the other node drops it. */
  resumed(session: Session): void {
    this.started(session);
    fanOut(this.deps.bus, 'session.moved', { tenantSeq: session.tenant.seq, sessionId: session.id, broadcastId: session.room.broadcastId, node: this.deps.nodes.node });
  }

  /** A session ended here (not moved away). */
  ended(session: Session): void {
    this.write(session, () => this.deps.directory.remove(session.tenant.seq, session.id, this.recordOf(session)));
  }

  /** Stops following moves and waits for the directory writes under way. */
  async stop(): Promise<void> {
    this.unsubscribe();
    await Promise.allSettled([...this.writes.values()]);
  }

  private recordOf(session: Session): OpenSession {
    return { node: this.deps.nodes.node, broadcastId: session.room.broadcastId, joinedAt: session.joinedAt };
  }

  private write(session: Session, job: () => Promise<void>): void {
    const previous = this.writes.get(session.key) ?? Promise.resolve();
    const next = previous.then(job).catch((error: unknown) => this.deps.log.warn({ err: error }, 'writing a session to the directory failed'));
    this.writes.set(session.key, next);
    void next.then(() => {
      if (this.writes.get(session.key) === next) this.writes.delete(session.key);
    });
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
