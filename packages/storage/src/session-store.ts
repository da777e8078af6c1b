import { createHash } from 'node:crypto';

/** One dashboard login. The secret the cookie carries is never stored: only its hash. */
export interface SessionRecord {
  /** SHA-256 (hex) of the session secret (see `hashSessionSecret`); the key of the session. */
  idHash: string;
  tenantSeq: number;
  /** Hash of the admin token that opened it: revoking the token ends the session. */
  tokenHash: string;
  createdAt: number;
  /** The session is refused from this moment on (epoch ms). */
  expiresAt: number;
}

/**
 * Dashboard sessions, shared by every process that uses the same store: a session opened on
 * one node is found on the others, and one ended on one node is gone for all of them.
 */
export interface SessionStore {
  createSession(session: SessionRecord): Promise<void>;
  /** The session with this id hash, expired or not (callers compare `expiresAt` with their clock), or null. */
  findSession(idHash: string): Promise<SessionRecord | null>;
  /** The tenant's sessions, expired or not, oldest first (id hashes in byte order at equal times). */
  listSessions(tenantSeq: number): Promise<SessionRecord[]>;
  /** Ends one session; false when there was none. */
  deleteSession(idHash: string): Promise<boolean>;
  /** Ends every session of a tenant; returns how many. */
  deleteTenantSessions(tenantSeq: number): Promise<number>;
  /** Ends every session opened with this admin token (by the token's hash); returns how many. */
  deleteTokenSessions(tokenHash: string): Promise<number>;
  /** Removes sessions whose `expiresAt` is at or before `now`; returns how many. */
  purgeExpiredSessions(now: number): Promise<number>;
}

/** The stored key of a session secret: its SHA-256 in hex. */
export function hashSessionSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}
