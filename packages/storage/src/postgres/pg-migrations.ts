/**
 * Schema migrations of the PostgreSQL metadata database, applied in order at start-up (see
 * PgDatabase.open). Append new migrations; never edit one that has shipped.
 *
 * Times are `timestamptz` (the records' epoch milliseconds go in and out as `Date`), so that
 * operators read them as times and retention can compare with `now()`. Settings are `json`,
 * not `jsonb`: `json` keeps the text as written, key order included.
 */
export interface PgMigration {
  version: number;
  name: string;
  /** Constant DDL text; never built from values. */
  sql: string;
}

export const PG_MIGRATIONS: PgMigration[] = [
  {
    version: 1,
    name: 'tenants, credentials, campaigns, broadcast registry',
    sql: `
      CREATE TABLE tenants (
        seq serial PRIMARY KEY,
        id text NOT NULL UNIQUE,
        name text NOT NULL,
        created_at timestamptz NOT NULL,
        retention_months integer NOT NULL,
        settings json NOT NULL
      );
      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        tenant_seq integer NOT NULL,
        key text NOT NULL UNIQUE,
        name text NOT NULL,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz
      );
      CREATE INDEX api_keys_tenant ON api_keys (tenant_seq);
      CREATE TABLE admin_tokens (
        id text PRIMARY KEY,
        tenant_seq integer NOT NULL,
        token_hash text NOT NULL UNIQUE,
        prefix text NOT NULL,
        name text NOT NULL,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz
      );
      CREATE INDEX admin_tokens_tenant ON admin_tokens (tenant_seq);
      -- A tenant's default campaign and those of discovered broadcasts are made with them.
      CREATE TABLE campaigns (
        tenant_seq integer NOT NULL,
        id bigint NOT NULL,
        name text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_seq, id)
      );
      CREATE TABLE broadcasts (
        tenant_seq integer NOT NULL,
        id text NOT NULL,
        campaign_id bigint NOT NULL,
        title text,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_seq, id)
      );
    `,
  },
  {
    version: 5,
    name: 'dashboard sessions',
    // Keyed by the SHA-256 of the session secret; the secret itself is never stored.
    sql: `
      CREATE TABLE dashboard_sessions (
        id_hash text PRIMARY KEY,
        tenant_seq integer NOT NULL,
        token_hash text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX dashboard_sessions_tenant ON dashboard_sessions (tenant_seq);
      CREATE INDEX dashboard_sessions_token ON dashboard_sessions (token_hash);
      CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
    `,
  },
];
