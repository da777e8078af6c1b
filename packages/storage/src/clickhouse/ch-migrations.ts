import { BROADCAST_ANSWERED_TABLE, BROADCAST_ANSWERS_TABLE, BROADCAST_HOURS_TABLE } from './ch-broadcast-tables';
import { CH_ROLLUPS, derivationSql, EVENT_HOUR, type ChRollup } from './ch-rollups';
import { DATA_FIELD_COLUMNS } from './data-fields';
import { sqlString } from './sql-literal';

/**
 * The ClickHouse schema, as numbered migrations applied in order at start-up and recorded in
 * `schema_migrations`. ClickHouse has no transactions and no locks, so nodes that start at
 * once may run a migration side by side: every statement must be idempotent (`IF NOT EXISTS`),
 * and the record of a version may appear more than once (it is read with DISTINCT).
 *
 * The statements run on ClickHouse 18.16 and on current releases (see the dialect check):
 * times are epoch milliseconds in Int64 (18.16 has no DateTime64), no TTL (retention drops
 * month partitions and deletes per tenant), no LowCardinality.
 *
 * Append new migrations at the end with the next version; never edit an applied one.
 */
export interface ChMigration {
  version: number;
  name: string;
  /** One statement each (the HTTP interface runs one per request). */
  statements: Array<string | ChStatement>;
  /**
   * A query that returns a row when the schema already is what the statements make (a database
   * made by the earlier migrations of a later version): the statements are skipped then, and the
   * migration is recorded. For statements that must not run twice at once, such as a `DROP`.
   */
  doneWhen?: string;
  /**
   * Copies run after the statements, one month partition of `table` at a time (each a request
   * of its own, with a long time limit): a whole large table in one request would outlast the
   * client's request timeout, and a migration that fails is started again at every open. The
   * copies must be harmless when run again (into a table that merges duplicates away).
   */
  partitionCopies?: { table: string; statement: (partition: number) => string }[];
}

/**
 * A statement that is not idempotent by itself (18.16 has no `ADD COLUMN IF NOT EXISTS`): it is
 * skipped when `doneWhen` returns a row, and its failure counts as done when `doneWhen` returns
 * one afterwards (another node starting at the same time ran it first).
 */
export interface ChStatement {
  sql: string;
  doneWhen: string;
}

/** A query that returns a row when `table` of this database has the column `column`. */
const hasColumn = (table: string, column: string) =>
  `SELECT 1 FROM system.columns WHERE database = currentDatabase() AND table = ${sqlString(table)} AND name = ${sqlString(column)}`;

/** The month partition of an epoch-millisecond column, as a UInt32 `YYYYMM`. */
export const monthPartition = (column: string) => `toYYYYMM(toDateTime(intDiv(${column}, 1000)))`;

/**
 * Rows of one month partition (`YYYYMM` as `monthPartition` gives it). The exact test uses the
 * server's time zone, as the partition key does; the range around it (the month ± 1 day, any
 * time zone) lets the server skip the parts of other months by their minimum and maximum time.
 */
export function monthPartitionFilter(column: string, partition: number): string {
  if (!Number.isInteger(partition) || partition < 100_001 || partition > 999_912) throw new Error(`Not a month partition: ${partition}`);
  const year = Math.floor(partition / 100);
  const month = partition % 100;
  const day = 86_400_000;
  const from = Date.UTC(year, month - 1, 1) - day;
  const to = Date.UTC(year, month, 1) + day;
  return `${column} >= ${from} AND ${column} < ${to} AND ${monthPartition(column)} = ${partition}`;
}

/**
 * A rollup's table, its columns typed as its derivation types them (so that rows read from it
 * and rows derived on the spot line up in one UNION ALL). Month partitions of the hour, as
 * `events` has them by time, so that retention drops both alike.
 */
function createRollupSql(rollup: ChRollup): string {
  return `CREATE TABLE IF NOT EXISTS ${rollup.table} ENGINE = MergeTree
    PARTITION BY ${monthPartition('hour')} ORDER BY (tenant_seq, hour, derivation)
    AS ${derivationSql(rollup, EVENTS_OF_MIGRATION_3, '0', '0', [])}`;
}

/**
 * `events` as the derivations read it, with no row, before migration 5 made the fields of `data`
 * its columns: its first columns by name and those fields computed (a node that already ran
 * migration 5 may be starting beside the one running migration 3).
 */
const EVENTS_OF_MIGRATION_3 = `(SELECT tenant_seq, event_id, event, user_id, session_id, broadcast_id, campaign_id, timestamp_ms, received_at_ms,
    country, order_id, sponsor_id, total, items, data, ${DATA_FIELD_COLUMNS.map(([column, value]) => `${value} AS ${column}`).join(', ')}
  FROM events WHERE 0)`;

export const CH_MIGRATIONS: ChMigration[] = [
  {
    version: 1,
    name: 'events and the quarantine',
    statements: [
      // ReplacingMergeTree keyed by (tenant, time, id): a retried event with the same time
      // merges away some time after it was written; until then every read
      // must collapse duplicates itself (FINAL, or LIMIT 1 BY).
      `CREATE TABLE IF NOT EXISTS events (
        tenant_seq UInt32,
        event_id UUID,
        event String,
        user_id Nullable(String),
        session_id String,
        broadcast_id String,
        campaign_id Int64,
        timestamp_ms Int64,
        received_at_ms Int64,
        country Nullable(String),
        order_id Nullable(String),
        sponsor_id Nullable(String),
        total Nullable(Float64),
        items Nullable(String),
        data String
      ) ENGINE = ReplacingMergeTree
      PARTITION BY ${monthPartition('timestamp_ms')}
      ORDER BY (tenant_seq, timestamp_ms, event_id)`,
      // Replacing too: a batch the writer stores again after a crash brings its rejects again.
      `CREATE TABLE IF NOT EXISTS rejected_events (
        tenant_seq UInt32,
        id UUID,
        received_at_ms Int64,
        code String,
        detail String,
        errors String,
        event_name Nullable(String),
        user_id Nullable(String),
        payload String
      ) ENGINE = ReplacingMergeTree
      PARTITION BY ${monthPartition('received_at_ms')}
      ORDER BY (tenant_seq, received_at_ms, id)`,
    ],
  },
  {
    version: 2,
    name: 'event ids, once per tenant whatever their time',
    statements: [
      // The writer looks a batch's ids up here before it inserts: `events` is ordered by time
      // first, and a copy sent again later may carry another clock-corrected time, so only a
      // table ordered by id finds it. The id is text: sets of strings hash faster than UUIDs on
      // 18.16. Month partitions of the event's time, as `events`, so that retention drops both;
      // the user, so that an erasure deletes the user's ids with their events.
      `CREATE TABLE IF NOT EXISTS event_ids (
        tenant_seq UInt32,
        event_id String,
        timestamp_ms Int64,
        user_id Nullable(String)
      ) ENGINE = ReplacingMergeTree
      PARTITION BY ${monthPartition('timestamp_ms')}
      ORDER BY (tenant_seq, event_id)`,
      // Every insert into `events` fills it in the same request, whoever inserts.
      `CREATE MATERIALIZED VIEW IF NOT EXISTS event_ids_of_events TO event_ids
      AS SELECT tenant_seq, toString(event_id) AS event_id, timestamp_ms, user_id FROM events`,
    ],
    // Events stored before this migration, a month at a time. Rows the view adds meanwhile come
    // twice, and a second node (or a restart after a failed open) copies them all again: the
    // same keys (tenant, id), merged away later, and the lookup reads ids as a set.
    partitionCopies: [
      {
        table: 'events',
        statement: (partition) => `INSERT INTO event_ids (tenant_seq, event_id, timestamp_ms, user_id)
      SELECT tenant_seq, toString(event_id), timestamp_ms, user_id FROM events
      WHERE ${monthPartitionFilter('timestamp_ms', partition)}`,
      },
    ],
  },
  {
    version: 3,
    name: 'hour rollups of the dashboard',
    statements: [
      // Every insert into `events` marks the hours it stored into, with the server's second.
      `CREATE TABLE IF NOT EXISTS touched_hours (tenant_seq UInt32, hour Int64, touched_at UInt32)
      ENGINE = ReplacingMergeTree(touched_at) PARTITION BY ${monthPartition('hour')} ORDER BY (tenant_seq, hour)`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS touched_hours_of_events TO touched_hours
      AS SELECT DISTINCT tenant_seq, ${EVENT_HOUR} AS hour, toUInt32(now()) AS touched_at FROM events`,
      // The newest derivation of each hour (see ch-rollup-deriver.ts).
      `CREATE TABLE IF NOT EXISTS rollup_versions (tenant_seq UInt32, hour Int64, derived_at UInt32, derivation UInt64)
      ENGINE = ReplacingMergeTree(derived_at) PARTITION BY ${monthPartition('hour')} ORDER BY (tenant_seq, hour)`,
      // Hours a node is deriving: the others leave them alone meanwhile.
      `CREATE TABLE IF NOT EXISTS rollup_claims (tenant_seq UInt32, hour Int64, claimed_at UInt32)
      ENGINE = ReplacingMergeTree(claimed_at) PARTITION BY ${monthPartition('hour')} ORDER BY (tenant_seq, hour)`,
      ...CH_ROLLUPS.map(createRollupSql),
    ],
    // The hours of events stored before this migration: derived by the nodes from then on.
    partitionCopies: [
      {
        table: 'events',
        statement: (partition) => `INSERT INTO touched_hours (tenant_seq, hour, touched_at)
      SELECT DISTINCT tenant_seq, ${EVENT_HOUR} AS hour, toUInt32(now()) FROM events WHERE ${monthPartitionFilter('timestamp_ms', partition)}`,
      },
    ],
  },
  {
    version: 4,
    name: 'vote and funnel rollups keyed by 64-bit numbers',
    // Migration 3 of this version already makes both tables so: nothing is dropped then (nodes
    // starting together on a new database would drop each other's tables).
    doneWhen: `SELECT count() AS columns FROM system.columns WHERE database = currentDatabase()
      AND ((table = 'vote_hours' AND name = 'voter_key') OR (table = 'funnel_hours' AND name = 'session_key')) HAVING columns = 2`,
    statements: [
      // The first vote is a number now (ch-rollups.ts, VOTE_ORDER), and votes and funnel
      // sessions are grouped by numeric keys: the two tables are made again (not rolling: see
      // docs/cluster.md), with their columns written out (a CREATE … AS SELECT inserts after it
      // creates, and another node's DROP in between would fail it), and every hour derived so far
      // is marked, so that panels read its events until a node has derived it again.
      'DROP TABLE IF EXISTS vote_hours',
      `CREATE TABLE IF NOT EXISTS vote_hours (derived_at UInt32, derivation UInt64, tenant_seq UInt32, hour Int64, broadcast_id String,
        campaign_id Int64, country Nullable(String), user_id Nullable(String), poll_id String, vote_key UInt64, voter_key UInt64,
        first_vote Int64, option_index Int64)
      ENGINE = MergeTree PARTITION BY ${monthPartition('hour')} ORDER BY (tenant_seq, hour, derivation)`,
      'DROP TABLE IF EXISTS funnel_hours',
      `CREATE TABLE IF NOT EXISTS funnel_hours (derived_at UInt32, derivation UInt64, tenant_seq UInt32, hour Int64, broadcast_id String,
        campaign_id Int64, country Nullable(String), user_id Nullable(String), session_id String, session_key UInt64,
        event_sponsor Nullable(String), viewed Array(Int64), added Array(Int64), started Array(Int64), completed Array(Int64))
      ENGINE = MergeTree PARTITION BY ${monthPartition('hour')} ORDER BY (tenant_seq, hour, derivation)`,
      `INSERT INTO touched_hours (tenant_seq, hour, touched_at) SELECT DISTINCT tenant_seq, hour, toUInt32(now()) FROM rollup_versions`,
    ],
  },
  {
    version: 5,
    name: 'the fields of data the dashboard reads, as columns of events',
    // Nodes write them with each event (data-fields.ts); parts stored before compute them from
    // `data` when read, with the same meaning, until a merge writes them out.
    statements: DATA_FIELD_COLUMNS.map(([column, value]) => ({
      sql: `ALTER TABLE events ADD COLUMN ${column} String DEFAULT ${value}`,
      doneWhen: hasColumn('events', column),
    })),
  },
  {
    version: 6,
    name: 'answers kept per broadcast',
    statements: [
      // Per derivation, the broadcasts of each hour it derived (ch-broadcast-answers.ts).
      `CREATE TABLE IF NOT EXISTS ${BROADCAST_HOURS_TABLE} (derived_at UInt32, derivation UInt64, tenant_seq UInt32, hour Int64, broadcast_id String)
      ENGINE = MergeTree PARTITION BY ${monthPartition('hour')} ORDER BY (tenant_seq, hour, derivation)`,
      // What the panels keep per broadcast (ch-broadcast-answers.ts), read by panel and answer…
      `CREATE TABLE IF NOT EXISTS ${BROADCAST_ANSWERS_TABLE} (tenant_seq UInt32, panel String, answer UInt64, broadcast_id String,
        text String, key UInt64, number Int64, count Int64)
      ENGINE = MergeTree ORDER BY (tenant_seq, panel, answer)`,
      // …and the answers made, each with the signature (the rows) it was made from.
      `CREATE TABLE IF NOT EXISTS ${BROADCAST_ANSWERED_TABLE} (tenant_seq UInt32, broadcast_id String, signature String, answer UInt64, computed_at UInt32)
      ENGINE = MergeTree ORDER BY (tenant_seq, broadcast_id)`,
    ],
    // The broadcasts of the hours derived before, from their session rows (every event has one),
    // each hour's marked as recorded from the same read: their answers are made by the nodes from
    // then on. Rows copied twice are read as a set.
    partitionCopies: [
      {
        table: 'session_hours',
        statement: (partition) => `INSERT INTO ${BROADCAST_HOURS_TABLE} (derived_at, derivation, tenant_seq, hour, broadcast_id)
      SELECT DISTINCT derived_at, derivation, tenant_seq, hour, arrayJoin([broadcast_id, '']) FROM session_hours WHERE ${monthPartitionFilter('hour', partition)}`,
      },
    ],
  },
];

/** The table that records applied migrations. */
export const CREATE_SCHEMA_MIGRATIONS_SQL = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version UInt32,
  name String,
  applied_at_ms Int64
) ENGINE = ReplacingMergeTree ORDER BY version`;
