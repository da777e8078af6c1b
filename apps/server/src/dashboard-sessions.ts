import { randomBytes } from 'node:crypto';
import type { Clock } from '@svc/protocol';
import { hashSessionSecret, type SessionStore } from '@svc/storage';

/** A dashboard login lasts this long. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
export const SESSION_COOKIE = 'svc_session';
/** Expired sessions are removed at a login at most this often (one expired is also removed when shown). */
export const SESSION_PURGE_INTERVAL_MS = 60 * 60 * 1000;
/** What `open` hands out: 32 random bytes in base64url. Anything else is refused without a lookup. */
const SESSION_SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Dashboard sessions, opened with an admin token and carried by an HttpOnly cookie. Kept in
 * the session store, so they outlive a restart and, on a shared store, work on every node;
 * the store holds only the SHA-256 of each session secret, never the secret. Every lookup
 * reads the store (by primary key, no cache), so a session ended anywhere is refused at once.
 */
export class DashboardSessions {
  private lastPurge = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: SessionStore,
    private readonly clock: Clock,
  ) {}

  /** Opens a session for an admin token of `tenantSeq` and returns its secret (the cookie's value). */
  async open(tenantSeq: number, tokenHash: string): Promise<string> {
    const now = this.clock.now();
    if (now - this.lastPurge >= SESSION_PURGE_INTERVAL_MS) {
      this.lastPurge = now;
      await this.store.purgeExpiredSessions(now);
    }
    const secret = randomBytes(32).toString('base64url');
    await this.store.createSession({ idHash: hashSessionSecret(secret), tenantSeq, tokenHash, createdAt: now, expiresAt: now + SESSION_TTL_MS });
    return secret;
  }

  /** The token hash behind a live session secret, or null. */
  async tokenHashOf(secret: string): Promise<string | null> {
    if (!SESSION_SECRET_PATTERN.test(secret)) return null;
    const idHash = hashSessionSecret(secret);
    const session = await this.store.findSession(idHash);
    if (!session) return null;
    if (session.expiresAt <= this.clock.now()) {
      await this.store.deleteSession(idHash);
      return null;
    }
    return session.tokenHash;
  }

  async close(secret: string): Promise<void> {
    if (SESSION_SECRET_PATTERN.test(secret)) await this.store.deleteSession(hashSessionSecret(secret));
  }
}

/** The value of one cookie in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return null;
}
