import type { DuckDBValue } from '@duckdb/node-api';
import { HOUR_MS, type AnalyticsFilter } from '../analytics-store';
import type { HourRollup } from './analytics-rollups';

/** SQL pieces the dashboard's queries share: parameters, filters, and reading the rollups. */

/** Bound parameters of one query, named `$1`, `$2`… in the order they are added. */
export class Params {
  readonly values: DuckDBValue[] = [];
  add(value: DuckDBValue): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The conditions every panel shares: tenant, campaign, broadcast, country. */
function dimensions(filter: AnalyticsFilter, p: Params): string[] {
  const clauses = [`tenant_seq = ${p.add(filter.tenantSeq)}`];
  if (filter.campaignId !== undefined) clauses.push(`campaign_id = ${p.add(filter.campaignId)}`);
  if (filter.broadcastId !== undefined) clauses.push(`broadcast_id = ${p.add(filter.broadcastId)}`);
  if (filter.country !== undefined) clauses.push(`country = ${p.add(filter.country)}`);
  return clauses;
}

const at = (p: Params, ms: number) => `epoch_ms(${p.add(ms)}::BIGINT)`;

/** The date range over a per-event rollup's `ts`. */
function timeClauses(filter: AnalyticsFilter, p: Params): string[] {
  const clauses: string[] = [];
  if (filter.fromMs !== undefined) clauses.push(`ts >= ${at(p, filter.fromMs)}`);
  if (filter.toMs !== undefined) clauses.push(`ts < ${at(p, filter.toMs)}`);
  return clauses;
}

/** `<name>`: the rows of a per-event rollup within the filter, as a CTE. */
export function eventRows(name: string, table: string, filter: AnalyticsFilter, p: Params, withSponsor: boolean): string {
  const clauses = [...dimensions(filter, p), ...timeClauses(filter, p)];
  if (withSponsor && filter.sponsorId !== undefined) clauses.push(`event_sponsor_id = ${p.add(filter.sponsorId)}`);
  return `${name} AS (SELECT * FROM ${table} WHERE ${clauses.join(' AND ')})`;
}

/**
 * `partials`: the rows of an hour rollup within the filter, as a CTE. The whole hours of the
 * range come from the rollup table; the part-hours at either end are derived from `events` on
 * the spot in the same way, so the answer is the one the raw events give.
 */
export function hourPartials(rollup: HourRollup, filter: AnalyticsFilter, hours: WholeHours, p: Params, withSponsor = false): string {
  const { fromMs, toMs } = filter;
  const { from: fullFrom, to: fullTo } = hours;
  const sponsor = withSponsor && filter.sponsorId !== undefined ? [`event_sponsor_id = ${p.add(filter.sponsorId)}`] : [];
  const raw: Array<[number | undefined, number | undefined]> = [];
  const parts: string[] = [];
  if (fullFrom !== undefined && fullTo !== undefined && fullFrom >= fullTo) {
    raw.push([fromMs, toMs]);
  } else {
    const clauses = [...dimensions(filter, p), ...sponsor];
    if (fullFrom !== undefined) clauses.push(`hour >= ${at(p, fullFrom)}`);
    if (fullTo !== undefined) clauses.push(`hour < ${at(p, fullTo)}`);
    parts.push(`SELECT * FROM ${rollup.table} WHERE ${clauses.join(' AND ')}`);
    if (fromMs !== undefined && fromMs < fullFrom!) raw.push([fromMs, fullFrom]);
    if (toMs !== undefined && fullTo! < toMs) raw.push([fullTo, toMs]);
  }
  if (raw.length) {
    const ranges = raw.map(([from, to]) => {
      const bounds = [from === undefined ? 'true' : `ts >= ${at(p, from)}`, to === undefined ? 'true' : `ts < ${at(p, to)}`];
      return `(${bounds.join(' AND ')})`;
    });
    const source = `(SELECT * FROM events WHERE ${dimensions(filter, p).join(' AND ')} AND (${ranges.join(' OR ')}))`;
    const derived = `SELECT *, false AS compacted, false AS only_row FROM (${rollup.derive(source)})`;
    parts.push(sponsor.length ? `${derived} WHERE ${sponsor.join(' AND ')}` : derived);
  }
  // Not materialized: a query that reads it twice scans the small tables twice instead of copying them.
  return `partials AS NOT MATERIALIZED (${parts.map((part) => `(${part})`).join(' UNION ALL BY NAME ')})`;
}

/**
 * `alone` and `grouped`: the rows of `partials` that a panel may take as they are (the only row
 * of their key, see `only_row`), and the others, which it groups by the rollup's `unique` key.
 * A key that also has rows not compacted yet (or derived from events here) is grouped.
 */
export function aloneAndGrouped(rollup: HourRollup): string {
  const key = rollup.unique;
  return `unsettled AS MATERIALIZED (SELECT DISTINCT ${key} FROM partials WHERE NOT compacted),
    alone AS NOT MATERIALIZED (SELECT * FROM partials ANTI JOIN unsettled USING (${key}) WHERE only_row),
    grouped AS NOT MATERIALIZED (
      SELECT * FROM partials WHERE NOT only_row
      UNION ALL SELECT * FROM partials SEMI JOIN unsettled USING (${key}) WHERE only_row)`;
}

/** The whole hours of a date range, as epoch ms: `from` inclusive, `to` exclusive. */
export interface WholeHours {
  from?: number;
  to?: number;
}
