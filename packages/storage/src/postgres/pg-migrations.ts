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
  {
    version: 3,
    name: 'webhook endpoints',
    sql: `
      -- Their deliveries stay beside the events (DuckDB): no foreign key points here.
      CREATE TABLE webhook_endpoints (
        tenant_seq integer NOT NULL,
        id text NOT NULL,
        url text NOT NULL,
        description text,
        event_types text[],
        enabled boolean NOT NULL,
        disabled_reason text,
        secret text NOT NULL,
        previous_secret text,
        previous_secret_expires_at timestamptz,
        failing_since timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_seq, id)
      );
      CREATE INDEX webhook_endpoints_enabled ON webhook_endpoints (tenant_seq, id) WHERE enabled;
    `,
  },
  {
    version: 4,
    name: 'deletion jobs, with the lease of the node running each',
    sql: `
      -- A job keeps only a SHA-256 of the userId it erases. A running job belongs to lease_owner
      -- until lease_expires_at; after that another node may claim it.
      CREATE TABLE deletion_jobs (
        id text PRIMARY KEY,
        tenant_seq integer NOT NULL,
        user_hash text NOT NULL,
        status text NOT NULL,
        requested_at timestamptz NOT NULL,
        completed_at timestamptz,
        purged_at timestamptz,
        deleted_events bigint,
        deleted_rejects bigint,
        error text,
        lease_owner text,
        lease_expires_at timestamptz
      );
      CREATE INDEX deletion_jobs_unfinished ON deletion_jobs (requested_at, id COLLATE "C") WHERE status IN ('pending', 'running');
      CREATE INDEX deletion_jobs_user ON deletion_jobs (tenant_seq, user_hash);
      CREATE INDEX deletion_jobs_unpurged ON deletion_jobs (completed_at) WHERE status = 'completed' AND purged_at IS NULL;
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
  {
    version: 6,
    name: 'webhook delivery log of cluster mode',
    // Deliveries wait in the JetStream work queue; a delivery enters the log with its first
    // outcome (attempt, or dropped because its endpoint was disabled). Attempts are only ever
    // appended: each row is the delivery's state after it, the newest (highest seq) is current.
    // Rows that are not attempts (replay, endpoint disabled) carry the last attempt's fields on.
    sql: `
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY,
        tenant_seq integer NOT NULL,
        endpoint_id text NOT NULL,
        event_id text NOT NULL,
        event text NOT NULL,
        user_id text,
        payload text NOT NULL,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (tenant_seq, endpoint_id, created_at DESC, id DESC);
      CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
      CREATE INDEX webhook_deliveries_user ON webhook_deliveries (tenant_seq, user_id) WHERE user_id IS NOT NULL;
      CREATE TABLE webhook_attempts (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
        status text NOT NULL,
        attempts integer NOT NULL,
        next_attempt_at timestamptz,
        attempted_at timestamptz,
        status_code integer,
        error text,
        latency_ms integer,
        PRIMARY KEY (delivery_id, seq)
      );
    `,
  },
];
