import type { AnalyticsFilter } from '../analytics-store';
import { EVENT_SPONSOR, eventConditions } from './ch-analytics-sql';
import { chNumber, type ChDatabase } from './ch-database';
import { derivationSql, HOUR_MS, type ChRollup } from './ch-rollups';
import { sqlInteger, sqlString } from './sql-literal';

/** An hour whose rows a panel reads from its rollup table: `derivation`, its newest derivation. */
export interface DerivedHour {
  hour: number;
  derivation: number;
}

/** Which hours of a filter's range a panel reads from the rollup tables, and which from the events. */
export interface RangeHours {
  /** Whole hours of the range derived after their last insert. */
  derived: DerivedHour[];
  /** Whole hours of the range stored into since their last derivation (or never derived). */
  pending: number[];
}

/**
 * The hours of the filter's range: an hour is derived when its newest derivation began at least
 * `settleSeconds` after the last insert into it (`touched_hours`, which every insert into
 * `events` fills), pending when stored into since. An hour never stored into holds no event
 * and is read nowhere. The range's cut hours at either end are read from the events too.
 */
export async function rangeHours(db: ChDatabase, filter: AnalyticsFilter, settleSeconds: number): Promise<RangeHours> {
  const whole = [`tenant_seq = ${sqlInteger(filter.tenantSeq)}`];
  if (filter.fromMs !== undefined) whole.push(`hour >= ${sqlInteger(filter.fromMs)}`);
  if (filter.toMs !== undefined) whole.push(`hour + ${HOUR_MS} <= ${sqlInteger(filter.toMs)}`);
  const where = whole.join(' AND ');
  const rows = await db.query<{ hour: string; derivation: string; derived: number }>(
    `SELECT hour, derivation, newest >= touched + ${sqlInteger(settleSeconds)} AS derived FROM (
       SELECT hour, max(touched_at) AS touched FROM touched_hours WHERE ${where} GROUP BY hour) AS t
     ANY LEFT JOIN (
       SELECT hour, argMax(derivation, derived_at) AS derivation, max(derived_at) AS newest FROM rollup_versions WHERE ${where} GROUP BY hour) AS v
     USING (hour)`,
  );
  const hours: RangeHours = { derived: [], pending: [] };
  for (const row of rows) {
    if (chNumber(row.derived) === 1) hours.derived.push({ hour: chNumber(row.hour), derivation: chNumber(row.derivation) });
    else hours.pending.push(chNumber(row.hour));
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

/**
 * The times a panel reads from the events, as a condition on `timestamp_ms` (`0` when none):
 * the pending hours and the range's cut hours, runs of adjacent hours joined, so that the read
 * skips every other part of the table by its sort key.
 */
function pendingTimes(filter: AnalyticsFilter, hours: RangeHours): string {
  const runs: Array<[number | undefined, number | undefined]> = [];
  const add = (from: number | undefined, to: number | undefined) => {
    if (from !== undefined && to !== undefined && from >= to) return;
    const last = runs[runs.length - 1];
    if (last && last[1] !== undefined && from !== undefined && last[1] >= from) last[1] = to === undefined ? undefined : Math.max(last[1], to);
    else runs.push([from, to]);
  };
  // Without a start (or an end), the range reaches past every hour: what lies beyond the hours
  // of `touched_hours` holds no event, so the open side needs no run of its own.
  const firstWhole = filter.fromMs === undefined ? undefined : Math.ceil(filter.fromMs / HOUR_MS) * HOUR_MS;
  const lastWhole = filter.toMs === undefined ? undefined : Math.floor(filter.toMs / HOUR_MS) * HOUR_MS;
  if (firstWhole !== undefined && lastWhole !== undefined && firstWhole >= lastWhole) add(filter.fromMs, filter.toMs);
  else {
    if (firstWhole !== undefined) add(filter.fromMs, firstWhole);
    for (const hour of [...hours.pending].sort((a, b) => a - b)) add(hour, hour + HOUR_MS);
    if (lastWhole !== undefined) add(lastWhole, filter.toMs);
  }
  if (!runs.length) return '0';
  const conditions = runs.map(([from, to]) => {
    const bounds = [...(from === undefined ? [] : [`timestamp_ms >= ${sqlInteger(from)}`]), ...(to === undefined ? [] : [`timestamp_ms < ${sqlInteger(to)}`])];
    return bounds.length ? `(${bounds.join(' AND ')})` : '1';
  });
  return `(${conditions.join(' OR ')})`;
}

/**
 * The rollup's rows for the filter, as a relation: those of the derived hours from its table,
 * and those of the rest of the range derived on the spot from the events (each once: a copy of
 * a retried event not merged yet is taken out first).
 */
export function rollupRows(rollup: ChRollup, filter: AnalyticsFilter, range: RangeHours, withSponsor: boolean): string {
  const tenant = `tenant_seq = ${sqlInteger(filter.tenantSeq)}`;
  const conditions = rowConditions(filter, withSponsor);
  const hours = range.derived;
  const derived = hours.length
    ? `hour >= ${sqlInteger(Math.min(...hours.map((h) => h.hour)))} AND hour <= ${sqlInteger(Math.max(...hours.map((h) => h.hour)))}
       AND (hour, derivation) IN (${hours.map((h) => `(${sqlInteger(h.hour)}, ${sqlInteger(h.derivation)})`).join(', ')})`
    : '0';
  const stored = `SELECT * FROM ${rollup.table} WHERE ${[tenant, derived, ...conditions].join(' AND ')}`;
  const sponsor = withSponsor && filter.sponsorId !== undefined ? ` AND ${EVENT_SPONSOR} = ${sqlString(filter.sponsorId)}` : '';
  const events = `(SELECT * FROM events WHERE ${eventConditions(filter, rollup.events ?? 'any', false)} AND ${pendingTimes(filter, range)}${sponsor} LIMIT 1 BY event_id)`;
  return `(${stored} UNION ALL ${derivationSql(rollup, events, '0', '0')})`;
}
