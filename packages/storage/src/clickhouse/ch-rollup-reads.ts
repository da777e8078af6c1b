import type { PollDefinition } from '@svc/protocol';
import type { AnalyticsFilter } from '../analytics-store';
import { EVENT_SPONSOR, eventConditions } from './ch-analytics-sql';
import { chNumber, type ChDatabase } from './ch-database';
import { HOUR_MS } from '../analytics-store';
import { derivationSql, type ChRollup } from './ch-rollups';
import { sqlInteger, sqlString } from './sql-literal';

/**
 * Hours `from`..`to` (hour starts, both included) whose rows a panel reads from the rollup
 * tables, all of derivation `derivation` (each its hour's newest). No other hour between them
 * holds rows to read: hours between are either of the run or were never stored into.
 */
export interface DerivedRun {
  from: number;
  to: number;
  derivation: number;
}

/** Which hours of a filter's range a panel reads from the rollup tables, and which times from the events. */
export interface RangeHours {
  /** Whole hours of the range derived after their last insert, as runs. */
  derived: DerivedRun[];
  /** How many hours the runs hold that were derived (the others between were never stored into). */
  derivedHours: number;
  /** Runs of time read from the events, [from, to) (undefined: unbounded): hours stored into since their last derivation, and the range's cut hours. */
  pending: Array<[number | undefined, number | undefined]>;
  /**
   * Tables holding the rows of the pending times already derived, by rollup table, for every
   * event of the tenant there, or of the read's broadcast (ch-pending-tables.ts); a rollup without
   * one derives them on the spot.
   */
  pendingTables?: Record<string, string>;
}

/**
 * The hours of the filter's range: a whole hour is derived when its newest derivation began at
 * least `settleSeconds` after the last insert into it (`touched_hours`, which every insert into
 * `events` fills), pending when stored into since; the range's cut hours at either end are read
 * from the events. An hour never stored into holds no event and is read nowhere.
 */
export async function rangeHours(db: ChDatabase, filter: AnalyticsFilter, settleSeconds: number): Promise<RangeHours> {
  const overlapping = [`tenant_seq = ${sqlInteger(filter.tenantSeq)}`];
  if (filter.fromMs !== undefined) overlapping.push(`hour + ${HOUR_MS} > ${sqlInteger(filter.fromMs)}`);
  if (filter.toMs !== undefined) overlapping.push(`hour < ${sqlInteger(filter.toMs)}`);
  const where = overlapping.join(' AND ');
  const rows = await db.query<{ hour: string; derivation: string; derived: number }>(
    `SELECT hour, derivation, newest >= touched + ${sqlInteger(settleSeconds)} AS derived FROM (
       SELECT hour, max(touched_at) AS touched FROM touched_hours WHERE ${where} GROUP BY hour) AS t
     ANY LEFT JOIN (
       SELECT hour, argMax(derivation, derived_at) AS derivation, max(derived_at) AS newest FROM rollup_versions WHERE ${where} GROUP BY hour) AS v
     USING (hour)
     ORDER BY hour`,
  );
  const hours: RangeHours = { derived: [], derivedHours: 0, pending: [] };
  let lastRead: number | null = null;
  for (const row of rows) {
    const hour = chNumber(row.hour);
    const from = filter.fromMs === undefined ? hour : Math.max(hour, filter.fromMs);
    const to = filter.toMs === undefined ? hour + HOUR_MS : Math.min(hour + HOUR_MS, filter.toMs);
    const whole = from === hour && to === hour + HOUR_MS;
    if (whole && chNumber(row.derived) === 1) {
      const derivation = chNumber(row.derivation);
      hours.derivedHours++;
      const run = hours.derived[hours.derived.length - 1];
      // A run goes on over hours of the same derivation until an hour read from the events.
      if (run && run.derivation === derivation && run.to === lastRead) run.to = hour;
      else hours.derived.push({ from: hour, to: hour, derivation });
      lastRead = hour;
    } else {
      lastRead = null;
      // Runs of adjacent times are read as one.
      const last = hours.pending[hours.pending.length - 1];
      if (last && last[1] === from) last[1] = to;
      else hours.pending.push([from, to]);
    }
  }
  return hours;
}

/** Conditions on a rollup's rows: the filter's campaign, broadcast and country, and the event's sponsor when `withSponsor`. */
function rowConditions(filter: AnalyticsFilter, withSponsor: boolean): string[] {
  const clauses: string[] = [];
  if (filter.campaignId !== undefined) clauses.push(`campaign_id = ${sqlInteger(filter.campaignId)}`);
  if (filter.broadcastId !== undefined) clauses.push(`broadcast_id = ${sqlString(filter.broadcastId)}`);
  if (filter.country !== undefined) clauses.push(`country = ${sqlString(filter.country)}`);
  if (withSponsor && filter.sponsorId !== undefined) clauses.push(`event_sponsor = ${sqlString(filter.sponsorId)}`);
  return clauses;
}

/** A time run as a condition on `timestamp_ms`. */
function timeRun([from, to]: [number | undefined, number | undefined]): string {
  const bounds = [...(from === undefined ? [] : [`timestamp_ms >= ${sqlInteger(from)}`]), ...(to === undefined ? [] : [`timestamp_ms < ${sqlInteger(to)}`])];
  return bounds.length ? `(${bounds.join(' AND ')})` : '1';
}

/** The range's derived hours, each of its listed derivation, as a condition on `hour` and `derivation` (`0` without any). */
export function derivedRunsCondition(range: RangeHours): string {
  if (!range.derived.length) return '0';
  const runs = range.derived.map((run) => `(hour >= ${sqlInteger(run.from)} AND hour <= ${sqlInteger(run.to)} AND derivation = ${sqlInteger(run.derivation)})`);
  return `(${runs.join(' OR ')})`;
}

/**
 * A panel's own conditions on the rows it reads: on the rows of derived hours, on the events of
 * pending times (and on their rows when derived ahead: only on columns both have).
 */
export interface RowConditions {
  stored?: string[];
  pending?: string[];
}

/** The range's pending times as a condition on `timestamp_ms` (`0` without any). */
export function pendingTimesCondition(range: RangeHours): string {
  return range.pending.length ? `(${range.pending.map(timeRun).join(' OR ')})` : '0';
}

/** A panel's condition that no row meets (e.g. `unansweredRows` when every broadcast of the derived hours is answered). */
export const NO_ROW = '0';

/**
 * The rollup's rows of the derived hours of the range, from its table (and matching `also`,
 * conditions of a panel's own); null when there are none to read: no derived hour, or a
 * condition `NO_ROW` (left out of the statement rather than read as a part that gives nothing,
 * which ClickHouse 18.16 still takes milliseconds to analyse).
 */
export function storedRows(rollup: ChRollup, filter: AnalyticsFilter, range: RangeHours, withSponsor: boolean, also: string[] = []): string | null {
  if (!range.derived.length || also.includes(NO_ROW)) return null;
  return `SELECT * FROM ${rollup.table} WHERE ${[`tenant_seq = ${sqlInteger(filter.tenantSeq)}`, derivedRunsCondition(range), ...rowConditions(filter, withSponsor), ...also].join(' AND ')}`;
}

/**
 * The events of the range's pending times the rollup derives rows from, each once (a copy of a
 * retried event not merged yet is taken out first); null when there are none.
 */
export function pendingEvents(rollup: ChRollup, filter: AnalyticsFilter, range: RangeHours, withSponsor: boolean, also: string[] = []): string | null {
  if (!range.pending.length) return null;
  const sponsor = withSponsor && filter.sponsorId !== undefined ? ` AND ${EVENT_SPONSOR} = ${sqlString(filter.sponsorId)}` : '';
  const more = also.map((condition) => ` AND ${condition}`).join('');
  return `(SELECT * FROM events WHERE ${eventConditions(filter, rollup.events ?? 'any', false)} AND (${range.pending.map(timeRun).join(' OR ')})${sponsor}${more} LIMIT 1 BY event_id)`;
}

/**
 * The rollup's rows for the filter, as a relation: those of the derived hours from its table,
 * and those of the pending times derived on the spot from the events (`polls`: the polls votes
 * are checked against there); each part matching the panel's own conditions in `also`.
 */
export function rollupRows(
  rollup: ChRollup,
  filter: AnalyticsFilter,
  range: RangeHours,
  withSponsor: boolean,
  polls: readonly PollDefinition[] = [],
  also: RowConditions = {},
): string {
  const stored = storedRows(rollup, filter, range, withSponsor, also.stored);
  const table = range.pendingTables?.[rollup.table];
  let derived: string | null;
  if (table !== undefined) {
    // Derived once for the read (its tenant, or broadcast): the rows carry what the filter and the panel's conditions are on.
    derived = `SELECT * FROM ${table} WHERE ${[`tenant_seq = ${sqlInteger(filter.tenantSeq)}`, ...rowConditions(filter, withSponsor), ...(also.pending ?? [])].join(' AND ')}`;
  } else {
    const events = pendingEvents(rollup, filter, range, withSponsor, also.pending);
    derived = events === null ? null : derivationSql(rollup, events, '0', '0', polls);
  }
  const parts = [stored, derived].filter((part): part is string => part !== null);
  // No hour to read: the table's rows of no hour, for the column names and types.
  return `(${parts.length ? parts.join(' UNION ALL ') : `SELECT * FROM ${rollup.table} WHERE 0`})`;
}
