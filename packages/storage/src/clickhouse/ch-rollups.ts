import type { PollDefinition } from '@svc/protocol';
import { CURRENCY, ENGAGING_EVENTS, EVENT_SPONSOR, firstKey, FUNNEL_EVENTS, ITEM_COUNT, MOMENT_EVENTS } from './ch-analytics-sql';
import { HOUR_MS } from '../analytics-store';
import { sqlList } from './sql-literal';
import { validVote } from './ch-valid-votes';

/**
 * The dashboard's hour rollups in ClickHouse: per UTC hour of event time, small rows derived
 * from the events of that hour, which the panels read instead of the events (ch-rollup-reads.ts).
 * Each is derived by `derive(source)` from a relation shaped like `events` holding each event
 * once (copies of a retried event taken out), and the same derivation runs over the events of
 * the hours not derived yet when a panel reads them, so both give the same rows.
 *
 * Rows are keyed by what a panel groups by (a session, a viewer's vote on a poll, an order…):
 * a key may have rows in several hours (a session that crosses an hour), and panels merge them
 * with aggregates that give the same answer over the pieces as over the whole (min, max, sum,
 * "first by time then id", distinct counts).
 *
 * Every row carries `derived_at` (the server's second when its derivation began) and
 * `derivation` (a random id): an hour's rows are those of its newest derivation listed in
 * `rollup_versions` (ch-rollup-deriver.ts), so a derivation that failed half-way, or one a later
 * one replaced, is never read.
 */
export interface ChRollup {
  table: string;
  /** The event names it derives rows from (every event when absent): what a read of the events fetches. */
  events?: readonly string[];
  /**
   * The rows of the events of `source` (every column of `events`), one hour each; `polls`: the
   * polls of the tenant its votes are on, as the service knows them now.
   */
  derive(source: string, polls: readonly PollDefinition[]): string;
}

/** The hour (its first epoch ms) of an event. */
export const EVENT_HOUR = `intDiv(timestamp_ms, ${HOUR_MS}) * ${HOUR_MS}`;
const DIMENSIONS = 'tenant_seq, hour, broadcast_id, campaign_id, country, user_id';
const VIEWER_KEY = 'cityHash64(coalesce(user_id, session_id))';

/** Per session in a broadcast and hour: its first and last event, and whether it joined and engaged. */
export const SESSION_HOURS: ChRollup = {
  table: 'session_hours',
  derive: (source) => `SELECT ${DIMENSIONS}, cityHash64(session_id, broadcast_id) AS session_key, ${VIEWER_KEY} AS viewer_key,
      min(timestamp_ms) AS first_ms, max(timestamp_ms) AS last_ms, max(event = 'broadcast.joined') AS joined,
      max(event IN ${sqlList(ENGAGING_EVENTS)}) AS engaged
    FROM (SELECT *, ${EVENT_HOUR} AS hour FROM ${source})
    GROUP BY ${DIMENSIONS}, session_key, viewer_key`,
};

/**
 * A vote's place in the order of "first" (time, then event id as text) as one exact 64-bit
 * number: its millisecond times 2^20, plus its rank by id among the votes of that millisecond in
 * `source` (0 when it has that millisecond alone): all the tenant's when hours are derived or a
 * read derives its pending times ahead (ch-pending-tables.ts; the broadcast's when the read is of
 * one), those matching the filter when a panel derives them on the spot. Every vote of a millisecond is in
 * one hour, so each relation holds all of a millisecond's votes it reads: the number is unique
 * among the votes a panel reads, and ordering or grouping by it is several times faster than by a
 * string of time and id. Exact for times from the year 1691 to 2248 and fewer than 2^20 votes of
 * one tenant in one millisecond.
 */
const VOTE_ORDER = `timestamp_ms * 1048576 + if(empty(tie_ids), 0, indexOf(tie_ids, toString(event_id)) - 1)`;

/**
 * Per session and userId, and poll in an hour: its first valid vote (`first_vote`, as
 * `VOTE_ORDER`) and that vote's option; `vote_key` names the session's votes on the poll,
 * `voter_key` the user's (0 without a userId). Votes are checked against the polls as the
 * service knows them when the hour is derived (a poll's closing time only ever moves to after
 * every vote it has, and a poll deleted since is left out when read).
 */
export const VOTE_HOURS: ChRollup = {
  table: 'vote_hours',
  events: ['poll.voted'],
  derive: (source, polls) => `SELECT ${DIMENSIONS}, poll_id, cityHash64(poll_id, session_id) AS vote_key,
      if(isNull(user_id), toUInt64(0), cityHash64(poll_id, assumeNotNull(user_id))) AS voter_key,
      min(vote_order) AS first_vote, argMin(toInt64(option_raw), vote_order) AS option_index
    FROM (SELECT *, ${EVENT_HOUR} AS hour, data_poll_id AS poll_id, data_option_index AS option_raw,
            data_option_selected AS option, ${VOTE_ORDER} AS vote_order
          FROM (SELECT * FROM ${source} WHERE event = 'poll.voted') AS votes
          ANY LEFT JOIN (
            SELECT tenant_seq, timestamp_ms, arraySort(groupArray(toString(event_id))) AS tie_ids FROM ${source}
            WHERE event = 'poll.voted' GROUP BY tenant_seq, timestamp_ms HAVING count() > 1) AS ties USING (tenant_seq, timestamp_ms))
    WHERE ${validVote(polls)}
    GROUP BY ${DIMENSIONS}, poll_id, session_id`,
};

/** Per session, sponsor of the moment and sponsor of the event in an hour: impressions and taps. */
export const SPONSOR_HOURS: ChRollup = {
  table: 'sponsor_hours',
  events: MOMENT_EVENTS,
  derive: (source) => `SELECT ${DIMENSIONS}, session_id, sponsor, event_sponsor, cityHash64(sponsor, broadcast_id, session_id) AS exposure_key,
      countIf(event = 'sponsor_moment.viewed') AS impressions, countIf(event = 'sponsor_moment.tapped') AS taps
    FROM (SELECT *, ${EVENT_HOUR} AS hour, data_sponsor_id AS sponsor, ${EVENT_SPONSOR} AS event_sponsor
          FROM ${source} WHERE event IN ${sqlList(MOMENT_EVENTS)})
    GROUP BY ${DIMENSIONS}, session_id, sponsor, event_sponsor`,
};

/**
 * Per order (and sponsor of the event, and whether the report names a commerce sponsor) in an
 * hour: its first report's time, session, sponsor, total, currency and item count.
 */
export const ORDER_HOURS: ChRollup = {
  table: 'order_hours',
  events: ['checkout.completed'],
  derive: (source) => `SELECT ${DIMENSIONS}, order_id, event_sponsor, isNotNull(sponsor_id) AS has_sponsor, min(first) AS first_report,
      argMin(timestamp_ms, first) AS order_ms, argMin(session_id, first) AS report_session, argMin(sponsor_id, first) AS report_sponsor,
      argMin(ifNull(total, 0), first) AS total, argMin(${CURRENCY}, first) AS currency, argMin(${ITEM_COUNT}, first) AS items
    FROM (SELECT *, ${EVENT_HOUR} AS hour, ${EVENT_SPONSOR} AS event_sponsor, ${firstKey()} AS first
          FROM ${source} WHERE event = 'checkout.completed' AND isNotNull(order_id))
    GROUP BY ${DIMENSIONS}, order_id, event_sponsor, has_sponsor`,
};

/** Per session (and sponsor of the event) in an hour: the times of its funnel events, by step; `session_key` names the session. */
export const FUNNEL_HOURS: ChRollup = {
  table: 'funnel_hours',
  events: FUNNEL_EVENTS,
  derive: (source) => `SELECT ${DIMENSIONS}, session_id, cityHash64(session_id) AS session_key, event_sponsor,
      groupArrayIf(timestamp_ms, event = 'product.viewed') AS viewed, groupArrayIf(timestamp_ms, event = 'cart.item_added') AS added,
      groupArrayIf(timestamp_ms, event = 'checkout.started') AS started, groupArrayIf(timestamp_ms, event = 'checkout.completed') AS completed
    FROM (SELECT *, ${EVENT_HOUR} AS hour, ${EVENT_SPONSOR} AS event_sponsor FROM ${source} WHERE event IN ${sqlList(FUNNEL_EVENTS)})
    GROUP BY ${DIMENSIONS}, session_id, event_sponsor`,
};

/** Per contest and viewer in an hour: their entries. */
export const CONTEST_HOURS: ChRollup = {
  table: 'contest_hours',
  events: ['contest.entered'],
  derive: (source) => `SELECT ${DIMENSIONS}, contest_id, ${VIEWER_KEY} AS viewer_key, count() AS entries
    FROM (SELECT *, ${EVENT_HOUR} AS hour, data_contest_id AS contest_id FROM ${source} WHERE event = 'contest.entered')
    WHERE contest_id != ''
    GROUP BY ${DIMENSIONS}, contest_id, viewer_key`,
};

export const CH_ROLLUPS = [SESSION_HOURS, VOTE_HOURS, SPONSOR_HOURS, ORDER_HOURS, FUNNEL_HOURS, CONTEST_HOURS];

/**
 * The rollup's rows of one derivation: `derived_at` and `derivation` first, then what `derive`
 * gives, in its own select list (a subquery level fewer: ClickHouse 18.16 takes milliseconds to
 * analyse each level around these expressions, and panels read the derivation of pending hours
 * in every query).
 */
export function derivationSql(rollup: ChRollup, source: string, derivedAt: string, derivation: string, polls: readonly PollDefinition[]): string {
  const rows = rollup.derive(source, polls);
  if (!rows.startsWith('SELECT ')) throw new Error(`The derivation of ${rollup.table} must be one SELECT.`);
  return `SELECT toUInt32(${derivedAt}) AS derived_at, toUInt64(${derivation}) AS derivation, ${rows.slice('SELECT '.length)}`;
}
