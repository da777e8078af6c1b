import { listValue, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { HOUR_MS } from '../analytics-store';

/**
 * The dashboard reads small tables kept beside `events`, written in the same transaction as
 * the events they come from, so that no panel parses JSON or scans every event. Each is
 * derived from events only and can be rebuilt from them at any time. Two kinds:
 *
 * - **Per-event tables** (`funnel_steps`, `order_reports`, `contest_entries`): one narrow, typed row per event of
 *   the kinds a panel reads one by one; a date range cuts them exactly.
 * - **Hour tables** (`session_hours`, `vote_hours`, `sponsor_hours`, `view_hours`): per session (or viewer)
 *   and UTC hour, what happened in that hour. Commits append partial rows; `compactRollups`
 *   merges the rows of a key into one, and readers group by key anyway, so partial rows never
 *   change an answer. A date range that cuts an hour reads that part-hour from `events` with
 *   the same derivation (see `hourPartials` in the analytics store).
 *
 * Each hour table also marks, in `only_row`, the rows that are the only row of their `unique`
 * key (a session, a viewer's vote on a poll, a sponsor exposure) in the whole table, as of the
 * last compaction. Panels take such rows as they are instead of grouping them by key, which is
 * most of the work over a long range (most sessions fit in one hour). `false` is always safe
 * (the row is grouped with the others of its key); a commit appends rows with `false`, and
 * readers treat a key that also has rows not compacted yet as not settled.
 */

const ENGAGING_EVENTS = "('poll.voted', 'contest.entered', 'sponsor_moment.tapped', 'product.tapped')";
/** The funnel's steps after the first (see `VIEW_HOURS`). */
const FUNNEL_EVENTS = "('cart.item_added', 'checkout.started', 'checkout.completed')";
const DIMENSIONS = 'tenant_seq INTEGER NOT NULL, broadcast_id VARCHAR NOT NULL, campaign_id BIGINT NOT NULL, country VARCHAR, user_id VARCHAR';
const json = (path: string) => `json_extract_string(data, '$.${path}')`;
/**
 * Sessions and viewers are grouped and joined by a 64-bit hash of their id, much cheaper than
 * the id itself (for a million sessions, the odds that two share a hash are about 1 in 30 million).
 */
const SESSION_KEY = 'hash(session_id)';
const VIEWER_KEY = 'hash(coalesce(user_id, session_id))';

export interface HourRollup {
  table: string;
  /** The event types it derives rows from (all when absent). */
  events?: readonly string[];
  /** Columns besides the dimensions, `hour` and `compacted`. */
  columns: string;
  /** Partial rows (named like the table's columns, without `compacted`) of a relation shaped like `events`. */
  derive(source: string): string;
  /** What identifies a row: rows with the same key are merged by `merge`. */
  key: string;
  /** The other columns, merged over rows of one key (SELECT list, aliased to their names). */
  merge: string;
  /** The column panels deduplicate by (a session, a vote, an exposure): what `only_row` is about. */
  unique: string;
}

export const SESSION_HOURS: HourRollup = {
  table: 'session_hours',
  columns: `session_key UBIGINT NOT NULL, viewer_key UBIGINT NOT NULL, first_ts TIMESTAMP NOT NULL, last_ts TIMESTAMP NOT NULL,
    joined BOOLEAN NOT NULL, engaged BOOLEAN NOT NULL, events BIGINT NOT NULL`,
  // Here a session is a session in one broadcast, as the viewer panel counts them.
  derive: (source) => `SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, hash(session_id, broadcast_id) AS session_key,
      ${VIEWER_KEY} AS viewer_key, date_trunc('hour', ts) AS hour,
      min(ts) AS first_ts, max(ts) AS last_ts, bool_or(event = 'broadcast.joined') AS joined,
      bool_or(event IN ${ENGAGING_EVENTS}) AS engaged, count(*) AS events
    FROM ${source} GROUP BY ALL`,
  key: 'tenant_seq, broadcast_id, campaign_id, country, user_id, session_key, viewer_key, hour',
  merge: `min(first_ts) AS first_ts, max(last_ts) AS last_ts, bool_or(joined) AS joined, bool_or(engaged) AS engaged,
    sum(events)::BIGINT AS events`,
  unique: 'session_key',
};

/**
 * A session's votes on a poll, under one userId, in an hour: the first one's choice. Only votes
 * that belong to a poll the service knows are derived (the poll's broadcast, received after the
 * poll was created, an option the poll has with its own label: the rule of `pollVoteProblem`);
 * the panel then applies the rule's "first of its session and of its userId" over these rows.
 * A poll's `closesAt` needs no test here: ingest quarantines later votes, and a poll's closing
 * time only ever moves to after every vote it has (the content service refuses the rest).
 */
export const VOTE_HOURS: HourRollup = {
  table: 'vote_hours',
  events: ['poll.voted'],
  columns: `viewer_key UBIGINT NOT NULL, vote_key UBIGINT NOT NULL, poll_id VARCHAR, first_ts TIMESTAMP NOT NULL, option_index INTEGER, option VARCHAR,
    question VARCHAR, votes BIGINT NOT NULL, first_event_id UUID`,
  // The vote's fields in one pass over `data`; the polls' own options from `overlays`. "First"
  // is by time, then event id, as in the rule.
  derive: (source) => `SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, viewer_key, vote_key, poll_id, hour, min(ts) AS first_ts,
      arg_min(event_id, (ts, event_id)) AS first_event_id, arg_min(option_index, (ts, event_id)) AS option_index,
      arg_min(option, (ts, event_id)) AS option, any_value(question) AS question, count(*) AS votes
    FROM (
      SELECT e.tenant_seq, e.broadcast_id, e.campaign_id, e.country, e.user_id, hash(coalesce(e.user_id, e.session_id)) AS viewer_key,
        hash(e.poll_id, e.session_id) AS vote_key, e.poll_id, date_trunc('hour', e.ts) AS hour, e.ts, e.event_id, e.option_index, e.option,
        p.poll.question AS question
      FROM (SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, session_id, ts, received_at, event_id,
              v.pollId AS poll_id, v.optionIndex AS option_index, v.optionSelected AS option
            FROM (SELECT *, json_transform(data, '{"pollId":"VARCHAR","optionIndex":"INTEGER","optionSelected":"VARCHAR"}') AS v
                  FROM ${source} WHERE event = 'poll.voted')) e
      JOIN (SELECT tenant_seq, id, broadcast_id, created_at, json_transform(content, '{"question":"VARCHAR","options":["VARCHAR"]}') AS poll
            FROM overlays WHERE type = 'poll') p
        ON p.tenant_seq = e.tenant_seq AND p.id = e.poll_id AND p.broadcast_id = e.broadcast_id AND e.received_at >= p.created_at
      WHERE e.option_index >= 0 AND e.option_index < len(p.poll.options) AND p.poll.options[e.option_index + 1] = e.option)
    GROUP BY tenant_seq, broadcast_id, campaign_id, country, user_id, viewer_key, vote_key, poll_id, hour`,
  key: 'tenant_seq, broadcast_id, campaign_id, country, user_id, viewer_key, vote_key, poll_id, hour',
  merge: `min(first_ts) AS first_ts, arg_min(first_event_id, (first_ts, first_event_id)) AS first_event_id,
    arg_min(option_index, (first_ts, first_event_id)) AS option_index, arg_min(option, (first_ts, first_event_id)) AS option,
    arg_min(question, (first_ts, first_event_id)) AS question, sum(votes)::BIGINT AS votes`,
  // A session's vote on a poll (and the userIds it voted under).
  unique: 'vote_key',
};

/** A session's impressions and taps of a sponsor's moments in an hour. */
export const SPONSOR_HOURS: HourRollup = {
  table: 'sponsor_hours',
  events: ['sponsor_moment.viewed', 'sponsor_moment.tapped'],
  columns: `session_key UBIGINT NOT NULL, exposure_key UBIGINT NOT NULL, sponsor_id VARCHAR, event_sponsor_id VARCHAR,
    impressions BIGINT NOT NULL, taps BIGINT NOT NULL`,
  derive: (source) => `SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, ${SESSION_KEY} AS session_key,
      hash(data_sponsor_id, broadcast_id, session_id) AS exposure_key, data_sponsor_id AS sponsor_id,
      coalesce(sponsor_id, data_sponsor_id) AS event_sponsor_id, date_trunc('hour', ts) AS hour,
      count(*) FILTER (WHERE event = 'sponsor_moment.viewed') AS impressions,
      count(*) FILTER (WHERE event = 'sponsor_moment.tapped') AS taps
    FROM (SELECT *, ${json('sponsorId')} AS data_sponsor_id FROM ${source} WHERE event IN ('sponsor_moment.viewed', 'sponsor_moment.tapped'))
    GROUP BY ALL`,
  key: 'tenant_seq, broadcast_id, campaign_id, country, user_id, session_key, exposure_key, sponsor_id, event_sponsor_id, hour',
  merge: 'sum(impressions)::BIGINT AS impressions, sum(taps)::BIGINT AS taps',
  unique: 'exposure_key',
};

/** A session's first product view in an hour: the funnel's first step. */
export const VIEW_HOURS: HourRollup = {
  table: 'view_hours',
  events: ['product.viewed'],
  columns: 'session_key UBIGINT NOT NULL, event_sponsor_id VARCHAR, first_ts TIMESTAMP NOT NULL',
  derive: (source) => `SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, ${SESSION_KEY} AS session_key,
      coalesce(sponsor_id, ${json('sponsorId')}) AS event_sponsor_id, date_trunc('hour', ts) AS hour, min(ts) AS first_ts
    FROM ${source} WHERE event = 'product.viewed' GROUP BY ALL`,
  key: 'tenant_seq, broadcast_id, campaign_id, country, user_id, session_key, event_sponsor_id, hour',
  merge: 'min(first_ts) AS first_ts',
  unique: 'session_key',
};

export const HOUR_ROLLUPS = [SESSION_HOURS, VOTE_HOURS, SPONSOR_HOURS, VIEW_HOURS];

interface EventRollup {
  table: string;
  events: readonly string[];
  columns: string;
  derive(source: string): string;
}

const FUNNEL_STEPS: EventRollup = {
  table: 'funnel_steps',
  events: ['cart.item_added', 'checkout.started', 'checkout.completed'],
  columns: 'session_key UBIGINT NOT NULL, event VARCHAR NOT NULL, ts TIMESTAMP NOT NULL, event_sponsor_id VARCHAR',
  derive: (source) => `SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, ${SESSION_KEY} AS session_key, event, ts,
      coalesce(sponsor_id, ${json('sponsorId')}) AS event_sponsor_id
    FROM ${source} WHERE event IN ${FUNNEL_EVENTS}`,
};

const ORDER_REPORTS: EventRollup = {
  table: 'order_reports',
  events: ['checkout.completed'],
  columns: `event_id UUID NOT NULL, session_key UBIGINT NOT NULL, order_id VARCHAR, ts TIMESTAMP NOT NULL, sponsor_id VARCHAR,
    event_sponsor_id VARCHAR, total DOUBLE, currency VARCHAR NOT NULL, item_count BIGINT NOT NULL`,
  derive: (source) => `SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, event_id, ${SESSION_KEY} AS session_key, order_id, ts, sponsor_id,
      coalesce(sponsor_id, ${json('sponsorId')}) AS event_sponsor_id, total, coalesce(${json('currency')}, '?') AS currency,
      coalesce(list_sum(list_transform(from_json(items, '[{"quantity":"INTEGER"}]'), x -> x.quantity)), 0) AS item_count
    FROM ${source} WHERE event = 'checkout.completed'`,
};

/** A contest entry: its contest and viewer (a 64-bit hash of userId, or of the session without one). */
const CONTEST_ENTRIES: EventRollup = {
  table: 'contest_entries',
  events: ['contest.entered'],
  columns: 'event_id UUID NOT NULL, contest_id VARCHAR NOT NULL, viewer_key UBIGINT NOT NULL, ts TIMESTAMP NOT NULL',
  derive: (source) => `SELECT tenant_seq, broadcast_id, campaign_id, country, user_id, event_id, contest_id, ${VIEWER_KEY} AS viewer_key, ts
    FROM (SELECT *, ${json('contestId')} AS contest_id FROM ${source} WHERE event = 'contest.entered')
    WHERE contest_id IS NOT NULL AND contest_id <> ''`,
};

/** The per-event tables of the version that introduced the rollups (migration 5), and those added since. */
const FIRST_EVENT_ROLLUPS = [FUNNEL_STEPS, ORDER_REPORTS];
const EVENT_ROLLUPS = [...FIRST_EVENT_ROLLUPS, CONTEST_ENTRIES];
const ALL_TABLES = [...HOUR_ROLLUPS, ...EVENT_ROLLUPS].map((r) => r.table);

const createHourTable = (r: HourRollup) => `CREATE TABLE ${r.table} (${DIMENSIONS}, hour TIMESTAMP NOT NULL, ${r.columns}, compacted BOOLEAN NOT NULL);`;
const createEventTable = (r: EventRollup) => `CREATE TABLE ${r.table} (${DIMENSIONS}, ${r.columns});`;

/** The rollup tables as the migration that introduced them made them (later ones add the rest). */
export const ROLLUP_TABLES_SQL = [...HOUR_ROLLUPS.map(createHourTable), ...FIRST_EVENT_ROLLUPS.map(createEventTable)].join('\n');

/** Rows go in in time order, as commits write them, so that a date range skips most of a table. */
function insertSql(source: string, compacted: boolean, present?: ReadonlySet<string>, eventRollups = EVENT_ROLLUPS): string[] {
  const needed = (r: { events?: readonly string[] }) => !present || !r.events || r.events.some((e) => present.has(e));
  return [
    ...HOUR_ROLLUPS.filter(needed).map((r) => `INSERT INTO ${r.table} BY NAME SELECT *, ${compacted} AS compacted FROM (${r.derive(source)}) ORDER BY hour`),
    ...eventRollups.filter(needed).map((r) => `INSERT INTO ${r.table} BY NAME ${r.derive(source)} ORDER BY ts`),
  ];
}

/** The rollup rows of every stored event, as SQL (for the migration that introduced the rollups). */
export const FILL_ROLLUPS_SQL = insertSql('events', true, undefined, FIRST_EVENT_ROLLUPS).join(';\n');

/** The stored events the rollups already hold (batches up to the watermark; later ones are derived by the rollup queue). */
const EVENTS_IN_ROLLUPS = '(SELECT * FROM events WHERE batch <= (SELECT max(applied) FROM rollup_watermark))';

/** Adds `contest_entries` and fills it from the events already in the rollups (for a migration; later batches are derived by the rollup queue). */
export const CONTEST_ENTRIES_SQL = `${createEventTable(CONTEST_ENTRIES)}
  INSERT INTO ${CONTEST_ENTRIES.table} BY NAME ${CONTEST_ENTRIES.derive(EVENTS_IN_ROLLUPS)} ORDER BY ts`;

/**
 * Sets `only_row` on the rows of `rollup` whose key is in `scope` (a relation with `tenant_seq`
 * and the rollup's `unique` column; every key when absent): true where the key has one row.
 */
function markOnlyRowsSql(rollup: HourRollup, scope?: string): string {
  const key = rollup.unique;
  const rows = scope ? `${rollup.table} SEMI JOIN ${scope} USING (tenant_seq, ${key})` : rollup.table;
  return `UPDATE ${rollup.table} t SET only_row = (k.n = 1)
    FROM (SELECT tenant_seq, ${key}, count(*) AS n FROM ${rows} GROUP BY ALL) k
    WHERE t.tenant_seq = k.tenant_seq AND t.${key} = k.${key} AND t.only_row IS DISTINCT FROM (k.n = 1)`;
}

/**
 * Derives `vote_hours` again from the events already in the rollups, by the vote rule (for the
 * migration that introduced it; later batches are derived by the rollup queue as usual).
 */
export const REDERIVE_VOTE_HOURS_SQL = `ALTER TABLE vote_hours ADD COLUMN IF NOT EXISTS first_event_id UUID;
  DELETE FROM vote_hours;
  INSERT INTO vote_hours BY NAME SELECT *, true AS compacted, false AS only_row
    FROM (${VOTE_HOURS.derive(EVENTS_IN_ROLLUPS)}) ORDER BY hour;
  ${markOnlyRowsSql(VOTE_HOURS)}`;

/** Adds `only_row` to tables made by an earlier version and marks their rows (for a migration). */
export const ONLY_ROW_SQL = HOUR_ROLLUPS.map((r) => `ALTER TABLE ${r.table} ADD COLUMN only_row BOOLEAN DEFAULT false;\n${markOnlyRowsSql(r)}`).join(';\n');

/**
 * Statements that append the rollup rows of `source` (events just stored in this transaction,
 * of `eventTypes`); they take no parameters, so a commit sends them in one batch with its other
 * statements. Without `eventTypes`, every statement.
 */
export function appendRollupsSql(source: string, eventTypes?: ReadonlySet<string>): string[] {
  // A statement costs about 2 ms even on no rows: skip those the commit's event types do not feed.
  return insertSql(source, false, eventTypes);
}

/** Derives every rollup again from the stored events (for events loaded around the ingest path). */
export async function rebuildRollups(connection: DuckDBConnection): Promise<void> {
  for (const table of ALL_TABLES) await connection.run(`DELETE FROM ${table}`);
  for (const sql of insertSql('events', true)) await connection.run(sql);
  // Every stored batch is in the rollups now (the caller makes sure no commit runs meanwhile).
  await connection.run('UPDATE rollup_watermark SET applied = (SELECT coalesce(max(batch), 0) FROM events)');
  for (const rollup of HOUR_ROLLUPS) await connection.run(markOnlyRowsSql(rollup));
}

/**
 * Derives the `vote_hours` rows of the tenant's polls `pollIds` again from their stored votes
 * (those already in the rollups; run it through the rollup queue's `transaction`, which derives
 * the others first), against the polls as `overlays` holds them now. For a node whose copy of a
 * poll landed after some of its votes were stored: those votes were checked against no poll then,
 * so they were left out. The new rows are not compacted and not marked alone: the next
 * compaction merges and marks them.
 */
export async function deriveVotesAgain(connection: DuckDBConnection, tenantSeq: number, pollIds: readonly string[]): Promise<void> {
  if (!pollIds.length) return;
  const values = [tenantSeq, listValue([...pollIds])];
  await connection.run(`DELETE FROM ${VOTE_HOURS.table} WHERE tenant_seq = $1 AND list_contains($2, poll_id)`, values);
  const votes = `(SELECT * FROM ${EVENTS_IN_ROLLUPS} AS e WHERE tenant_seq = $1 AND event = 'poll.voted' AND list_contains($2, ${json('pollId')}))`;
  await connection.run(`INSERT INTO ${VOTE_HOURS.table} BY NAME SELECT *, false AS compacted, false AS only_row FROM (${VOTE_HOURS.derive(votes)}) ORDER BY hour`, values);
}

/** Rows of the tenant's user (matched by `match` over `user_id`) go with the user's events. */
export async function deleteUserRollups(connection: DuckDBConnection, match: string, values: DuckDBValue[]): Promise<void> {
  for (const table of ALL_TABLES) await connection.run(`DELETE FROM ${table} WHERE ${match}`, values);
}

/**
 * Merges the partial rows of every hour that received some since the last compaction into
 * one row per key. Returns the number of rows it replaced.
 */
export async function compactRollups(connection: DuckDBConnection): Promise<number> {
  let replaced = 0;
  for (const rollup of HOUR_ROLLUPS) {
    await connection.run('BEGIN TRANSACTION');
    try {
      await connection.run(`CREATE OR REPLACE TEMP TABLE compacting_hours AS SELECT DISTINCT tenant_seq, hour FROM ${rollup.table} WHERE NOT compacted`);
      await connection.run(
        `CREATE OR REPLACE TEMP TABLE compacted_rows AS
         SELECT ${rollup.key}, ${rollup.merge}, true AS compacted
         FROM ${rollup.table} SEMI JOIN compacting_hours USING (tenant_seq, hour) GROUP BY ALL`,
      );
      const removed = await connection.run(
        `DELETE FROM ${rollup.table} r WHERE EXISTS (SELECT 1 FROM compacting_hours c WHERE c.tenant_seq = r.tenant_seq AND c.hour = r.hour)`,
      );
      await connection.run(`INSERT INTO ${rollup.table} BY NAME SELECT * FROM compacted_rows ORDER BY hour`);
      // The keys just merged may have rows in other hours too (a session that crossed an hour).
      await connection.run(markOnlyRowsSql(rollup, `(SELECT DISTINCT tenant_seq, ${rollup.unique} FROM compacted_rows)`));
      await connection.run('DROP TABLE compacting_hours; DROP TABLE compacted_rows');
      await connection.run('COMMIT');
      replaced += Number(removed.rowsChanged);
    } catch (error) {
      await connection.run('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }
  return replaced;
}

/**
 * After a tenant's events before `cutoffMs` were deleted (same transaction): drops the rollup
 * rows of those events, and derives the hour the cutoff falls in again from what remains of it.
 */
export async function purgeRollupsBefore(connection: DuckDBConnection, tenantSeq: number, cutoffMs: number): Promise<void> {
  const hourStart = Math.floor(cutoffMs / HOUR_MS) * HOUR_MS;
  for (const rollup of EVENT_ROLLUPS) {
    await connection.run(`DELETE FROM ${rollup.table} WHERE tenant_seq = $1 AND ts < epoch_ms($2::BIGINT)`, [tenantSeq, cutoffMs]);
  }
  const rest = `(SELECT * FROM events WHERE tenant_seq = $1 AND ts >= epoch_ms($2::BIGINT) AND ts < epoch_ms($3::BIGINT))`;
  for (const rollup of HOUR_ROLLUPS) {
    await connection.run(`DELETE FROM ${rollup.table} WHERE tenant_seq = $1 AND hour <= epoch_ms($2::BIGINT)`, [tenantSeq, hourStart]);
    await connection.run(`INSERT INTO ${rollup.table} BY NAME SELECT *, true AS compacted FROM (${rollup.derive(rest)})`, [
      tenantSeq,
      hourStart,
      hourStart + HOUR_MS,
    ]);
  }
}
