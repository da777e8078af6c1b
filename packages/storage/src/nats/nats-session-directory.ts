import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { sameOpenSession, sessionDirectoryKey, SESSION_DIRECTORY_MAX_AGE_MS, type OpenSession, type SessionDirectory } from '../session-directory';

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
    const kv = await new Kvm(connection).create(SESSIONS_BUCKET, {
      replicas: options.replicas,
      history: 1,
      ttl: options.maxAgeMs ?? SESSION_DIRECTORY_MAX_AGE_MS,
      timeout: timeoutMs,
    });
    return new NatsSessionDirectory(kv, timeoutMs);
  }

  async record(tenantSeq: number, sessionId: string, session: OpenSession): Promise<void> {
    const value: OpenSession = { node: session.node, broadcastId: session.broadcastId, joinedAt: session.joinedAt };
    await this.kv.put(sessionDirectoryKey(tenantSeq, sessionId), JSON.stringify(value), { timeout: this.timeoutMs });
  }

  async find(tenantSeq: number, sessionId: string): Promise<OpenSession | null> {
    return openSession(await this.kv.get(sessionDirectoryKey(tenantSeq, sessionId)));
  }

  async remove(tenantSeq: number, sessionId: string, session: OpenSession): Promise<void> {
    const key = sessionDirectoryKey(tenantSeq, sessionId);
    const entry = await this.kv.get(key);
    const found = openSession(entry);
    if (!entry || !found || !sameOpenSession(found, session)) return;
    try {
      // Compare-and-delete: a record written meanwhile (the session moved) stays.
      await this.kv.delete(key, { previousSeq: entry.revision });
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence)) throw error;
    }
  }
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
