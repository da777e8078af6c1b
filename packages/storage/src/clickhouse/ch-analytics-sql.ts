import type { AnalyticsFilter } from '../analytics-store';
import { sqlInteger, sqlList, sqlString } from './sql-literal';

/**
 * SQL pieces the dashboard's ClickHouse queries share: which events a panel reads, and the
 * fields of `data` it needs (columns of `events`: data-fields.ts). Values enter only through
 * sql-literal.
 *
 * Duplicates: `events` is a ReplacingMergeTree, so a retried event (same tenant, id and time)
 * may sit twice until a merge. The panels read it without `FINAL` and still count it once:
 * every aggregate they use gives the same answer over a row and its copy (min, max, "first by
 * time then id", distinct counts, `uniqExact(event_id)` where events are counted), which was
 * measured faster than `FINAL` or `LIMIT 1 BY` (docs/benchmarks.md, "Dashboard on ClickHouse").
 */

/** Engagement: a viewer did at least one of these. */
export const ENGAGING_EVENTS = ['poll.voted', 'contest.entered', 'sponsor_moment.tapped', 'product.tapped'] as const;
export const MOMENT_EVENTS = ['sponsor_moment.viewed', 'sponsor_moment.tapped'] as const;
export const FUNNEL_EVENTS = ['product.viewed', 'cart.item_added', 'checkout.started', 'checkout.completed'] as const;

/** The sponsor an event is about: its commerce `sponsorId`, else the `sponsorId` of its data. */
export const EVENT_SPONSOR = `coalesce(sponsor_id, nullIf(data_sponsor_id, ''))`;

/** A viewer: the signed-in user, else the session. */
export const VIEWER = 'coalesce(user_id, session_id)';

/**
 * "First" among events, as one string that sorts that way: earliest time, then smallest event id
 * as text (as the vote rule compares them; ClickHouse orders UUIDs otherwise). The time is 16 hex
 * digits (bit 62 set so that none is dropped; times are from 1970 on). `argMin` over a string is
 * about three times faster on 18.16 than over a tuple (measured), and copies of an event share it.
 */
export const firstKey = (eventId = 'toString(event_id)') => `concat(hex(bitOr(toUInt64(timestamp_ms), 4611686018427387904)), ${eventId})`;

/**
 * The `WHERE` conditions of the events that match the filter: tenant, time range, the event
 * names (`'any'`: all), campaign, broadcast, country and, when `withSponsor`, the sponsor (the
 * panels that ignore the sponsor pass false). Tenant and time first: they lead the sort key.
 */
export function eventConditions(filter: AnalyticsFilter, names: readonly string[] | 'any', withSponsor: boolean): string {
  const clauses = [`tenant_seq = ${sqlInteger(filter.tenantSeq)}`];
  if (filter.fromMs !== undefined) clauses.push(`timestamp_ms >= ${sqlInteger(filter.fromMs)}`);
  if (filter.toMs !== undefined) clauses.push(`timestamp_ms < ${sqlInteger(filter.toMs)}`);
  if (names !== 'any') clauses.push(`event IN ${sqlList(names)}`);
  if (filter.campaignId !== undefined) clauses.push(`campaign_id = ${sqlInteger(filter.campaignId)}`);
  if (filter.broadcastId !== undefined) clauses.push(`broadcast_id = ${sqlString(filter.broadcastId)}`);
  if (filter.country !== undefined) clauses.push(`country = ${sqlString(filter.country)}`);
  if (withSponsor && filter.sponsorId !== undefined) clauses.push(`${EVENT_SPONSOR} = ${sqlString(filter.sponsorId)}`);
  return clauses.join(' AND ');
}

/** The sum of the `quantity` of an order's line items (`items` is JSON text of LINE_ITEM_SCHEMA objects). */
export const ITEM_COUNT = `arraySum(arrayMap(q -> toInt64(q), extractAll(ifNull(items, '[]'), ${sqlString('"quantity":(\\d+)')})))`;

/** An order's currency: its data's `currency`, '?' when missing (data-fields.ts). */
export const CURRENCY = 'data_currency';
