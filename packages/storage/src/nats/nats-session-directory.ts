import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { openKvBucket } from './kv-bucket';
import { natsFailure } from './nats-failure';
import { removalOf, sessionDirectoryKey, SESSION_DIRECTORY_MAX_AGE_MS, type FoundSession, type OpenSession, type SessionDirectory, type SessionRemoval } from '../session-directory';

/** The JetStream KV bucket of open sessions. */
export const SESSIONS_BUCKET = 'svc_sessions';

/** How long one request to the bucket may take, ms: a viewer's join never waits longer for it. */
export const SESSION_DIRECTORY_TIMEOUT_MS = 1_000;

export interface NatsSessionDirectoryOptions {
  /** Replicas of the bucket's stream (1 on one NATS server, 3 in production). */
  replicas: number;
  /** The bucket's max age, ms; default SESSION_DIRECTORY_MAX_AGE_MS. Fixed when the bucket is created. */
  maxAgeMs?: number;
  /** Default SESSION_DIRECTORY_TIMEOUT_MS. */
  timeoutMs?: number;
}

/**
 * The session directory of full cluster mode: the JetStream KV bucket `svc_sessions`, one key
 * per open session (`sessionDirectoryKey`: no identifier in clear), its value small JSON
 * (`OpenSession`), one revision kept per key, every record gone after the bucket's max age.
 */
export class NatsSessionDirectory implements SessionDirectory {
  private constructor(
    private readonly kv: KV,
    private readonly timeoutMs: number,
  ) {}

  /** Opens the bucket, creating it when no node did yet. */
  static async open(connection: NatsConnection, options: NatsSessionDirectoryOptions): Promise<NatsSessionDirectory> {
    const timeoutMs = options.timeoutMs ?? SESSION_DIRECTORY_TIMEOUT_MS;
    try {
      const kv = await openKvBucket(connection, SESSIONS_BUCKET, { replicas: options.replicas, ttlMs: options.maxAgeMs ?? SESSION_DIRECTORY_MAX_AGE_MS, timeoutMs });
      return new NatsSessionDirectory(kv, timeoutMs);
    } catch (error) {
      // storage_unavailable: a node starting while JetStream elects the bucket's leader waits for it.
      throw natsFailure(error, 'open the session directory');
    }
  }

  async record(tenantSeq: number, sessionId: string, session: OpenSession): Promise<number> {
    return this.inTime(this.kv.put(sessionDirectoryKey(tenantSeq, sessionId), valueOf(session), { timeout: this.timeoutMs }));
  }

  async find(tenantSeq: number, sessionId: string): Promise<FoundSession | null> {
    const entry = await this.inTime(this.kv.get(sessionDirectoryKey(tenantSeq, sessionId)));
    const session = openSession(entry);
    return entry && session ? { session, revision: entry.revision } : null;
  }

  async move(tenantSeq: number, sessionId: string, session: OpenSession, revision: number): Promise<number | null> {
    try {
      return await this.inTime(this.kv.update(sessionDirectoryKey(tenantSeq, sessionId), valueOf(session), revision, this.timeoutMs));
    } catch (error) {
      if (wrongLastSequence(error)) return null;
      throw error;
    }
  }

  async remove(tenantSeq: number, sessionId: string, session: OpenSession, revision?: number | null): Promise<SessionRemoval> {
    const key = sessionDirectoryKey(tenantSeq, sessionId);
    if (revision != null) {
      try {
        // After this node's write on the same connection, so never before it.
        await this.inTime(this.kv.delete(key, { previousSeq: revision }));
        return 'removed';
      } catch (error) {
        if (!wrongLastSequence(error)) throw error;
      }
    }
    // A record rewritten between the read and the delete is read again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const entry = await this.inTime(this.kv.get(key));
      const removal = removalOf(openSession(entry), session);
      if (removal !== 'delete') return removal;
      try {
        // Compare-and-delete: a record written meanwhile (the session moved) stays.
        await this.inTime(this.kv.delete(key, { previousSeq: entry!.revision }));
        return 'removed';
      } catch (error) {
        if (!wrongLastSequence(error)) throw error;
      }
    }
    return 'moved';
  }

  /** The request, or a failure once the timeout passed (a request the client holds while it reconnects may outlast it). */
  private inTime<T>(request: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`The session directory did not answer within ${this.timeoutMs} ms.`)), this.timeoutMs + 100);
    });
    return Promise.race([request, late]).finally(() => clearTimeout(timer));
  }
}

function valueOf(session: OpenSession): string {
  const value: OpenSession = { node: session.node, broadcastId: session.broadcastId, joinedAt: session.joinedAt };
  return JSON.stringify(value);
}

function wrongLastSequence(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence;
}

/** The record an entry holds, or null (none, deleted, or not a record). */
function openSession(entry: { operation: string; json<T>(): T } | null): OpenSession | null {
  if (!entry || entry.operation !== 'PUT') return null;
  let value: unknown;
  try {
    value = entry.json<unknown>();
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { node, broadcastId, joinedAt } = value as Record<string, unknown>;
  if (typeof node !== 'string' || typeof broadcastId !== 'string' || typeof joinedAt !== 'number' || !Number.isFinite(joinedAt)) return null;
  return { node, broadcastId, joinedAt };
}
