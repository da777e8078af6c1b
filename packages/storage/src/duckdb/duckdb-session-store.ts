import type { SessionRecord, SessionStore } from '../session-store';
import type { DuckDbDatabase, Row } from './duckdb-database';

const SESSION_COLUMNS = `id_hash, tenant_seq, token_hash, epoch_ms(created_at) AS created_at_ms, epoch_ms(expires_at) AS expires_at_ms`;

/** Dashboard sessions in the embedded database: they outlive a restart of the process. */
export class DuckDbSessionStore implements SessionStore {
  constructor(private readonly db: DuckDbDatabase) {}

  async createSession(session: SessionRecord): Promise<void> {
    await this.db.write((c) =>
      c.run(
        `INSERT INTO dashboard_sessions (id_hash, tenant_seq, token_hash, created_at, expires_at)
         VALUES ($1, $2, $3, epoch_ms($4::BIGINT), epoch_ms($5::BIGINT))`,
        [session.idHash, session.tenantSeq, session.tokenHash, session.createdAt, session.expiresAt],
      ),
    );
  }

  async findSession(idHash: string): Promise<SessionRecord | null> {
    const rows = await this.db.query(`SELECT ${SESSION_COLUMNS} FROM dashboard_sessions WHERE id_hash = $1`, [idHash]);
    return rows[0] ? toSession(rows[0]) : null;
  }

  async listSessions(tenantSeq: number): Promise<SessionRecord[]> {
    const rows = await this.db.query(`SELECT ${SESSION_COLUMNS} FROM dashboard_sessions WHERE tenant_seq = $1 ORDER BY created_at, id_hash`, [tenantSeq]);
    return rows.map(toSession);
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return (await this.deleteWhere('id_hash = $1', [idHash])) > 0;
  }

  deleteTenantSessions(tenantSeq: number): Promise<number> {
    return this.deleteWhere('tenant_seq = $1', [tenantSeq]);
  }

  deleteTokenSessions(tokenHash: string): Promise<number> {
    return this.deleteWhere('token_hash = $1', [tokenHash]);
  }

  purgeExpiredSessions(now: number): Promise<number> {
    return this.deleteWhere('expires_at <= epoch_ms($1::BIGINT)', [now]);
  }

  /** `where` is constant text; values are bound. */
  private deleteWhere(where: string, values: Array<string | number>): Promise<number> {
    return this.db.write(async (c) => Number((await c.run(`DELETE FROM dashboard_sessions WHERE ${where}`, values)).rowsChanged));
  }
}

function toSession(row: Row): SessionRecord {
  return {
    idHash: String(row.id_hash),
    tenantSeq: Number(row.tenant_seq),
    tokenHash: String(row.token_hash),
    createdAt: Number(row.created_at_ms),
    expiresAt: Number(row.expires_at_ms),
  };
}
