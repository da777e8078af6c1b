import { randomBytes } from 'node:crypto';
import type { Clock } from '@svc/protocol';

/** A dashboard login lasts this long. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
export const SESSION_COOKIE = 'svc_session';
const MAX_SESSIONS = 10_000;

interface DashboardSession {
  /** Hash of the admin token that opened it: revoking the token ends the session. */
  tokenHash: string;
  expiresAt: number;
}

/**
 * Dashboard sessions, opened with an admin token and carried by an HttpOnly cookie. Kept in
 * memory: a restart asks people to log in again, and no session secret is ever stored.
 */
export class DashboardSessions {
  private readonly sessions = new Map<string, DashboardSession>();

  constructor(private readonly clock: Clock) {}

  open(tokenHash: string): string {
    if (this.sessions.size >= MAX_SESSIONS) this.sweep();
    const id = randomBytes(32).toString('base64url');
    this.sessions.set(id, { tokenHash, expiresAt: this.clock.now() + SESSION_TTL_MS });
    return id;
  }

  /** The token hash behind a live session id, or null. */
  tokenHashOf(id: string): string | null {
    const session = this.sessions.get(id);
    if (!session) return null;
    if (session.expiresAt <= this.clock.now()) {
      this.sessions.delete(id);
      return null;
    }
    return session.tokenHash;
  }

  close(id: string): void {
    this.sessions.delete(id);
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [id, session] of this.sessions) if (session.expiresAt <= now) this.sessions.delete(id);
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
