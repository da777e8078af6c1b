/**
 * Schema migrations, applied in order at start-up, each in its own transaction.
 * Append new migrations; never edit one that has shipped.
 */
import { CONTEST_ENTRIES_SQL, FILL_ROLLUPS_SQL, ONLY_ROW_SQL, REDERIVE_VOTE_HOURS_SQL, ROLLUP_TABLES_SQL } from './analytics-rollups';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'tenants, credentials, broadcasts, events, quarantine',
    sql: `
      CREATE SEQUENCE tenant_seq START 1;
      CREATE TABLE tenants (
        seq INTEGER PRIMARY KEY DEFAULT nextval('tenant_seq'),
        id VARCHAR NOT NULL UNIQUE,
        name VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        retention_months INTEGER NOT NULL,
        settings VARCHAR NOT NULL
      );
      CREATE TABLE api_keys (
        id VARCHAR PRIMARY KEY,
        tenant_seq INTEGER NOT NULL,
        key VARCHAR NOT NULL UNIQUE,
        name VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        revoked_at TIMESTAMP
      );
      CREATE TABLE admin_tokens (
        id VARCHAR PRIMARY KEY,
        tenant_seq INTEGER NOT NULL,
        token_hash VARCHAR NOT NULL UNIQUE,
        prefix VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        revoked_at TIMESTAMP
      );
      CREATE TABLE broadcasts (
        tenant_seq INTEGER NOT NULL,
        id VARCHAR NOT NULL,
        campaign_id BIGINT NOT NULL,
        title VARCHAR,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (tenant_seq, id)
      );
      -- The key is (tenant, UUID): fixed-width and time-ordered for UUIDv7, which keeps the
      -- dedupe index cheap to insert into.
      CREATE TABLE events (
        tenant_seq INTEGER NOT NULL,
        event_id UUID NOT NULL,
        event VARCHAR NOT NULL,
        user_id VARCHAR,
        session_id VARCHAR NOT NULL,
        broadcast_id VARCHAR NOT NULL,
        campaign_id BIGINT NOT NULL,
        ts TIMESTAMP NOT NULL,
        received_at TIMESTAMP NOT NULL,
        country VARCHAR,
        order_id VARCHAR,
        sponsor_id VARCHAR,
        total DOUBLE,
        items VARCHAR,
        data VARCHAR NOT NULL,
        PRIMARY KEY (tenant_seq, event_id)
      );
      CREATE TABLE rejected_events (
        tenant_seq INTEGER NOT NULL,
        id UUID NOT NULL,
        received_at TIMESTAMP NOT NULL,
        code VARCHAR NOT NULL,
        detail VARCHAR NOT NULL,
        errors VARCHAR NOT NULL,
        event_name VARCHAR,
        user_id VARCHAR,
        payload VARCHAR NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'deletion jobs',
    sql: `
      -- A job keeps only a SHA-256 of the userId it erases.
      CREATE TABLE deletion_jobs (
        id VARCHAR PRIMARY KEY,
        tenant_seq INTEGER NOT NULL,
        user_hash VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        requested_at TIMESTAMP NOT NULL,
        completed_at TIMESTAMP,
        deleted_events BIGINT,
        deleted_rejects BIGINT,
        error VARCHAR
      );
    `,
  },
  {
    version: 3,
    name: 'content: campaigns, sponsors, overlays',
    sql: `
      CREATE TABLE campaigns (
        tenant_seq INTEGER NOT NULL,
        id BIGINT NOT NULL,
        name VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (tenant_seq, id)
      );
      INSERT INTO campaigns
        SELECT DISTINCT tenant_seq, campaign_id, 'Campaign ' || campaign_id, now()::TIMESTAMP FROM broadcasts;
      CREATE TABLE sponsors (
        tenant_seq INTEGER NOT NULL,
        id VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (tenant_seq, id)
      );
      CREATE TABLE overlays (
        tenant_seq INTEGER NOT NULL,
        broadcast_id VARCHAR NOT NULL,
        id VARCHAR NOT NULL,
        type VARCHAR NOT NULL,
        content VARCHAR NOT NULL,
        active BOOLEAN NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        PRIMARY KEY (tenant_seq, id)
      );
    `,
  },
  {
    version: 4,
    name: 'webhook endpoints and deliveries',
    sql: `
      CREATE TABLE webhook_endpoints (
        tenant_seq INTEGER NOT NULL,
        id VARCHAR NOT NULL,
        url VARCHAR NOT NULL,
        description VARCHAR,
        event_types VARCHAR,
        enabled BOOLEAN NOT NULL,
        disabled_reason VARCHAR,
        secret VARCHAR NOT NULL,
        previous_secret VARCHAR,
        previous_secret_expires_at TIMESTAMP,
        failing_since TIMESTAMP,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        PRIMARY KEY (tenant_seq, id)
      );
      -- The outbox and the delivery log in one: pending rows are the outbox.
      CREATE TABLE webhook_deliveries (
        id UUID PRIMARY KEY,
        tenant_seq INTEGER NOT NULL,
        endpoint_id VARCHAR NOT NULL,
        event_id UUID NOT NULL,
        event VARCHAR NOT NULL,
        user_id VARCHAR,
        payload VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        attempts INTEGER NOT NULL,
        next_attempt_at TIMESTAMP,
        last_attempt_at TIMESTAMP,
        last_status_code INTEGER,
        last_error VARCHAR,
        last_latency_ms INTEGER,
        created_at TIMESTAMP NOT NULL,
        delivered_at TIMESTAMP
      );
    `,
  },
  {
    version: 5,
    name: 'dashboard rollups',
    sql: `
      ${ROLLUP_TABLES_SQL}
      ${FILL_ROLLUPS_SQL};
    `,
  },
  {
    version: 6,
    name: 'storage probe',
    // One row that readiness rewrites to learn whether writes reach the disk again.
    sql: `CREATE TABLE storage_probe (id INTEGER PRIMARY KEY, probed_at TIMESTAMP NOT NULL, padding VARCHAR NOT NULL);`,
  },
  {
    version: 7,
    name: 'rollup rows alone in their key',
    sql: `${ONLY_ROW_SQL};`,
  },
  {
    version: 8,
    name: 'rollups derived after the commit',
    // Each commit numbers its events; the rollups hold every batch up to the watermark (see RollupQueue).
    sql: `ALTER TABLE events ADD COLUMN batch BIGINT DEFAULT 0;
      CREATE TABLE rollup_watermark (applied BIGINT NOT NULL);
      INSERT INTO rollup_watermark VALUES (0);`,
  },
  {
    version: 9,
    name: 'votes counted by the vote rule',
    // Votes are keyed by session and checked against their poll (docs/analytics.md, "Poll votes").
    sql: `${REDERIVE_VOTE_HOURS_SQL};`,
  },
  {
    version: 10,
    name: 'deletion jobs: when the erased bytes left every file',
    sql: `ALTER TABLE deletion_jobs ADD COLUMN purged_at TIMESTAMP;`,
  },
  {
    version: 11,
    name: 'overlays: when last shown; sponsors: logo',
    // Overlays shown before this version have no known show time (null).
    sql: `ALTER TABLE overlays ADD COLUMN shown_at TIMESTAMP;
      ALTER TABLE sponsors ADD COLUMN logo_url VARCHAR;`,
  },
  {
    version: 12,
    name: 'dashboard sessions',
    // Keyed by the SHA-256 of the session secret; the secret itself is never stored.
    sql: `CREATE TABLE dashboard_sessions (
        id_hash VARCHAR PRIMARY KEY,
        tenant_seq INTEGER NOT NULL,
        token_hash VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP NOT NULL
      );`,
  },
  {
    version: 13,
    name: 'contest entries for the dashboard',
    // The contests panel read every event of its range (docs/analytics.md, "Rollups").
    sql: `${CONTEST_ENTRIES_SQL};`,
  },
];
