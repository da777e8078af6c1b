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
    version: 2,
    name: 'content: sponsors, overlays',
    // Campaigns and broadcasts are version 1's. An overlay's content is `json` like settings:
    // read back with its keys in the order written.
    sql: `
      CREATE TABLE sponsors (
        tenant_seq integer NOT NULL,
        id text NOT NULL,
        name text NOT NULL,
        created_at timestamptz NOT NULL,
        logo_url text,
        PRIMARY KEY (tenant_seq, id)
      );
      CREATE TABLE overlays (
        tenant_seq integer NOT NULL,
        broadcast_id text NOT NULL,
        id text NOT NULL,
        type text NOT NULL,
        content json NOT NULL,
        active boolean NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        shown_at timestamptz,
        PRIMARY KEY (tenant_seq, id)
      );
      CREATE INDEX overlays_broadcast ON overlays (tenant_seq, broadcast_id);
    `,
  },
];
