import type { SessionRecord, SessionStore } from '../session-store';
import type { PgDatabase } from './pg-database';

interface SessionRow {
  id_hash: string;
  tenant_seq: number;
  token_hash: string;
  created_at: Date;
  expires_at: Date;
}

/**
 * Dashboard sessions in PostgreSQL, shared by every node: each lookup reads the row by its
 * primary key, so a session ended on one node is refused on every other at its next request.
 */
export class PgSessionStore implements SessionStore {
  constructor(private readonly db: PgDatabase) {}

  async createSession(session: SessionRecord): Promise<void> {
    await this.db.run(
      (sql) => sql`
        INSERT INTO dashboard_sessions (id_hash, tenant_seq, token_hash, created_at, expires_at)
        VALUES (${session.idHash}, ${session.tenantSeq}, ${session.tokenHash}, ${new Date(session.createdAt)}, ${new Date(session.expiresAt)})`,
    );
  }

  async findSession(idHash: string): Promise<SessionRecord | null> {
    const [row] = await this.db.run((sql) => sql<SessionRow[]>`SELECT * FROM dashboard_sessions WHERE id_hash = ${idHash}`);
    return row ? toSession(row) : null;
  }

  async listSessions(tenantSeq: number): Promise<SessionRecord[]> {
    const rows = await this.db.run(
      (sql) => sql<SessionRow[]>`SELECT * FROM dashboard_sessions WHERE tenant_seq = ${tenantSeq} ORDER BY created_at, id_hash COLLATE "C"`,
    );
    return rows.map(toSession);
  }

  async deleteSession(idHash: string): Promise<boolean> {
    const result = await this.db.run((sql) => sql`DELETE FROM dashboard_sessions WHERE id_hash = ${idHash}`);
    return result.count > 0;
  }

  async deleteTenantSessions(tenantSeq: number): Promise<number> {
    return (await this.db.run((sql) => sql`DELETE FROM dashboard_sessions WHERE tenant_seq = ${tenantSeq}`)).count;
  }

  async deleteTokenSessions(tokenHash: string): Promise<number> {
    return (await this.db.run((sql) => sql`DELETE FROM dashboard_sessions WHERE token_hash = ${tokenHash}`)).count;
  }

  async purgeExpiredSessions(now: number): Promise<number> {
    return (await this.db.run((sql) => sql`DELETE FROM dashboard_sessions WHERE expires_at <= ${new Date(now)}`)).count;
  }
}

function toSession(row: SessionRow): SessionRecord {
  return {
    idHash: row.id_hash,
    tenantSeq: row.tenant_seq,
    tokenHash: row.token_hash,
    createdAt: row.created_at.getTime(),
    expiresAt: row.expires_at.getTime(),
  };
}
