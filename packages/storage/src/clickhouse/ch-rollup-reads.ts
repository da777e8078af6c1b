import type { AnalyticsFilter } from '../analytics-store';
import { EVENT_SPONSOR, eventConditions } from './ch-analytics-sql';
import { chNumber, type ChDatabase } from './ch-database';
import { derivationSql, HOUR_MS, type ChRollup } from './ch-rollups';
import { sqlInteger, sqlString } from './sql-literal';

/**
 * An hour whose rows a panel reads from its rollup table: wholly inside the range, derived
 * after its last stored event (`derivation`, its newest derivation).
 */
export interface DerivedHour {
  hour: number;
  derivation: number;
}

/**
 * The hours of the filter's range the rollup tables answer: an hour counts when its newest
 * derivation began at least `settleSeconds` after the last insert into it (`touched_hours`,
 * filled by every insert into `events`). The rest of the range (hours not derived yet, the
 * current one, the range's cut hours at either end) is derived from the events when read.
 */
export async function derivedHours(db: ChDatabase, filter: AnalyticsFilter, settleSeconds: number): Promise<DerivedHour[]> {
  const whole = [`tenant_seq = ${sqlInteger(filter.tenantSeq)}`];
  if (filter.fromMs !== undefined) whole.push(`hour >= ${sqlInteger(filter.fromMs)}`);
  if (filter.toMs !== undefined) whole.push(`hour + ${HOUR_MS} <= ${sqlInteger(filter.toMs)}`);
  const where = whole.join(' AND ');
  const rows = await db.query<{ hour: string; derivation: string }>(
    `SELECT hour, derivation FROM (
       SELECT hour, argMax(derivation, derived_at) AS derivation, max(derived_at) AS derived FROM rollup_versions WHERE ${where} GROUP BY hour) AS v
     ANY LEFT JOIN (SELECT hour, max(touched_at) AS touched FROM touched_hours WHERE ${where} GROUP BY hour) AS t USING (hour)
     WHERE derived >= touched + ${sqlInteger(settleSeconds)}`,
  );
  return rows.map((row) => ({ hour: chNumber(row.hour), derivation: chNumber(row.derivation) }));
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
 * The rollup's rows for the filter, as a relation: those of the derived hours from its table,
 * and those of the rest of the range derived on the spot from the events (each once: a copy of
 * a retried event not merged yet is taken out first).
 */
export function rollupRows(rollup: ChRollup, filter: AnalyticsFilter, hours: DerivedHour[], withSponsor: boolean): string {
  const tenant = `tenant_seq = ${sqlInteger(filter.tenantSeq)}`;
  const conditions = rowConditions(filter, withSponsor);
  const derived = hours.length
    ? `(hour, derivation) IN (${hours.map((h) => `(${sqlInteger(h.hour)}, ${sqlInteger(h.derivation)})`).join(', ')})`
    : '0';
  const stored = `SELECT * FROM ${rollup.table} WHERE ${[tenant, derived, ...conditions].join(' AND ')}`;
  const notDerived = hours.length ? ` AND intDiv(timestamp_ms, ${HOUR_MS}) NOT IN (${hours.map((h) => sqlInteger(h.hour / HOUR_MS)).join(', ')})` : '';
  const sponsor = withSponsor && filter.sponsorId !== undefined ? ` AND ${EVENT_SPONSOR} = ${sqlString(filter.sponsorId)}` : '';
  const events = `(SELECT * FROM events WHERE ${eventConditions(filter, rollup.events ?? 'any', false)}${sponsor}${notDerived} LIMIT 1 BY event_id)`;
  return `(${stored} UNION ALL ${derivationSql(rollup, events, '0', '0')})`;
}
