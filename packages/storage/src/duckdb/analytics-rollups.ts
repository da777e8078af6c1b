import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * The dashboard reads two tables kept beside `events`, written in the same transaction as the
 * events they come from, so that its panels never parse JSON or scan every event:
 *
 * - `metric_events`: one narrow, typed row per event that a panel looks at one by one (votes,
 *   sponsor moments, the four funnel steps, orders), with the fields the panels need already
 *   pulled out of `data`;
 * - `session_hours`: per session, broadcast, viewer, country and UTC hour, the first and last
 *   event time and whether it joined or engaged. Commits append partial rows; `compact` merges
 *   the rows of a key into one. Readers group by session, so partial rows never change answers.
 *
 * Both are derived from events only: they can be rebuilt from `events` at any time.
 */

export const ENGAGING_EVENTS = "('poll.voted', 'contest.entered', 'sponsor_moment.tapped', 'product.tapped')";
const METRIC_EVENTS = `('poll.voted', 'sponsor_moment.viewed', 'sponsor_moment.tapped', 'product.viewed',
  'cart.item_added', 'checkout.started', 'checkout.completed')`;
export const HOUR_MS = 3_600_000;

export const ROLLUP_TABLES_SQL = `
  CREATE TABLE metric_events (
    tenant_seq INTEGER NOT NULL,
    event_id UUID NOT NULL,
    event VARCHAR NOT NULL,
    ts TIMESTAMP NOT NULL,
    session_id VARCHAR NOT NULL,
    broadcast_id VARCHAR NOT NULL,
    campaign_id BIGINT NOT NULL,
    country VARCHAR,
    user_id VARCHAR,
    sponsor_id VARCHAR,
    data_sponsor_id VARCHAR,
    poll_id VARCHAR,
    question VARCHAR,
    option_index INTEGER,
    option VARCHAR,
    order_id VARCHAR,
    total DOUBLE,
    currency VARCHAR,
    item_count BIGINT
  );
  CREATE TABLE session_hours (
    tenant_seq INTEGER NOT NULL,
    session_id VARCHAR NOT NULL,
    broadcast_id VARCHAR NOT NULL,
    campaign_id BIGINT NOT NULL,
    country VARCHAR,
    user_id VARCHAR,
    hour TIMESTAMP NOT NULL,
    first_ts TIMESTAMP NOT NULL,
    last_ts TIMESTAMP NOT NULL,
    joined BOOLEAN NOT NULL,
    engaged BOOLEAN NOT NULL,
    events BIGINT NOT NULL,
    compacted BOOLEAN NOT NULL
  );
`;

/** `metric_events` rows of `source` (any relation with the columns of `events`). */
export function metricEventsSelect(source: string): string {
  const when = (event: string, expression: string) => `CASE WHEN event = '${event}' THEN ${expression} END`;
  return `SELECT tenant_seq, event_id, event, ts, session_id, broadcast_id, campaign_id, country, user_id, sponsor_id,
      json_extract_string(data, '$.sponsorId'),
      ${when('poll.voted', "json_extract_string(data, '$.pollId')")},
      ${when('poll.voted', "json_extract_string(data, '$.questionText')")},
      ${when('poll.voted', "TRY_CAST(json_extract(data, '$.optionIndex') AS INTEGER)")},
      ${when('poll.voted', "json_extract_string(data, '$.optionSelected')")},
      order_id, total,
      ${when('checkout.completed', "coalesce(json_extract_string(data, '$.currency'), '?')")},
      ${when('checkout.completed', `coalesce(list_sum(list_transform(from_json(items, '[{"quantity":"INTEGER"}]'), x -> x.quantity)), 0)`)}
    FROM ${source} WHERE event IN ${METRIC_EVENTS}`;
}

/** Partial `session_hours` rows (without `compacted`) of `source`, one per key and hour. */
export function sessionHoursSelect(source: string): string {
  return `SELECT tenant_seq, session_id, broadcast_id, campaign_id, country, user_id, date_trunc('hour', ts) AS hour,
      min(ts) AS first_ts, max(ts) AS last_ts, bool_or(event = 'broadcast.joined') AS joined,
      bool_or(event IN ${ENGAGING_EVENTS}) AS engaged, count(*) AS events
    FROM ${source} GROUP BY ALL`;
}

/** Appends the rollup rows of `source` (events just stored in this transaction). */
export async function appendRollups(connection: DuckDBConnection, source: string): Promise<void> {
  await connection.run(`INSERT INTO metric_events ${metricEventsSelect(source)}`);
  await connection.run(`INSERT INTO session_hours SELECT *, false FROM (${sessionHoursSelect(source)})`);
}

/** Fills the rollups from every stored event (for events loaded around the ingest path). */
export async function rebuildRollups(connection: DuckDBConnection): Promise<void> {
  await connection.run('DELETE FROM metric_events');
  await connection.run('DELETE FROM session_hours');
  await connection.run(`INSERT INTO metric_events ${metricEventsSelect('events')}`);
  await connection.run(`INSERT INTO session_hours SELECT *, true FROM (${sessionHoursSelect('events')})`);
}

const KEY = 'tenant_seq, session_id, broadcast_id, campaign_id, country, user_id, hour';

/**
 * Merges the partial `session_hours` rows of every hour that received some since the last
 * compaction into one row per key. Returns the number of rows it replaced.
 */
export async function compactSessionHours(connection: DuckDBConnection): Promise<number> {
  await connection.run('BEGIN TRANSACTION');
  try {
    await connection.run(
      `CREATE OR REPLACE TEMP TABLE compacting_hours AS SELECT DISTINCT tenant_seq, hour FROM session_hours WHERE NOT compacted`,
    );
    await connection.run(
      `CREATE OR REPLACE TEMP TABLE compacted_rows AS
       SELECT ${KEY}, min(first_ts) AS first_ts, max(last_ts) AS last_ts, bool_or(joined) AS joined,
              bool_or(engaged) AS engaged, sum(events)::BIGINT AS events, true AS compacted
       FROM session_hours SEMI JOIN compacting_hours USING (tenant_seq, hour) GROUP BY ALL`,
    );
    const removed = await connection.run(
      `DELETE FROM session_hours s WHERE EXISTS (SELECT 1 FROM compacting_hours c WHERE c.tenant_seq = s.tenant_seq AND c.hour = s.hour)`,
    );
    await connection.run(`INSERT INTO session_hours SELECT * FROM compacted_rows`);
    await connection.run('DROP TABLE compacting_hours');
    await connection.run('DROP TABLE compacted_rows');
    await connection.run('COMMIT');
    return Number(removed.rowsChanged);
  } catch (error) {
    await connection.run('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * After a tenant's events before `cutoffMs` were deleted: drops the rollup rows of those
 * events, and derives again the hour the cutoff falls in from the events that remain of it.
 */
export async function purgeRollupsBefore(connection: DuckDBConnection, tenantSeq: number, cutoffMs: number): Promise<void> {
  const hourStart = Math.floor(cutoffMs / HOUR_MS) * HOUR_MS;
  await connection.run('DELETE FROM metric_events WHERE tenant_seq = $1 AND ts < epoch_ms($2::BIGINT)', [tenantSeq, cutoffMs]);
  await connection.run('DELETE FROM session_hours WHERE tenant_seq = $1 AND hour <= epoch_ms($2::BIGINT)', [tenantSeq, hourStart]);
  await connection.run(
    `INSERT INTO session_hours SELECT *, true FROM (${sessionHoursSelect(
      `(SELECT * FROM events WHERE tenant_seq = $1 AND ts >= epoch_ms($2::BIGINT) AND ts < epoch_ms($3::BIGINT))`,
    )})`,
    [tenantSeq, hourStart, hourStart + HOUR_MS],
  );
}
