import type { DuckDBValue } from '@duckdb/node-api';
import type { EventFilter, EventOrder, EventPosition } from '../event-store';

/** Columns of an exported event, in the shape `toStoredEvent` reads. */
export const EVENT_SELECT = `event_id::VARCHAR AS event_id, event, user_id, session_id, broadcast_id, campaign_id,
  epoch_ms(ts) AS ts_ms, epoch_ms(received_at) AS received_at_ms, country, order_id, sponsor_id, total, items, data`;

/**
 * WHERE clause of an event filter. Values are always bound parameters (numbered from
 * `values.length + 1`); column names come from this file only.
 */
export function eventWhere(filter: EventFilter, values: DuckDBValue[], after?: EventPosition, order: EventOrder = 'asc'): string {
  const param = (value: DuckDBValue) => {
    values.push(value);
    return `$${values.length}`;
  };
  const clauses = [`tenant_seq = ${param(filter.tenantSeq)}`];
  if (filter.campaignId !== undefined) clauses.push(`campaign_id = ${param(filter.campaignId)}`);
  if (filter.fromMs !== undefined) clauses.push(`ts >= epoch_ms(${param(filter.fromMs)}::BIGINT)`);
  if (filter.toMs !== undefined) clauses.push(`ts < epoch_ms(${param(filter.toMs)}::BIGINT)`);
  if (filter.broadcastId !== undefined) clauses.push(`broadcast_id = ${param(filter.broadcastId)}`);
  if (filter.userId !== undefined) clauses.push(`user_id = ${param(filter.userId)}`);
  if (filter.country !== undefined) clauses.push(`country = ${param(filter.country)}`);
  if (filter.sponsorId !== undefined) {
    const sponsor = param(filter.sponsorId);
    // An event whose data DuckDB cannot read (see undecodable-events) has no sponsor here, rather than failing the query.
    clauses.push(`(sponsor_id = ${sponsor} OR (sponsor_id IS NULL AND CASE WHEN json_valid(data) THEN json_extract_string(data, '$.sponsorId') END = ${sponsor}))`);
  }
  if (filter.events?.length) {
    clauses.push(`event IN (${filter.events.map((e) => param(e)).join(', ')})`);
  }
  if (filter.receivedUpToMs !== undefined) clauses.push(`received_at <= epoch_ms(${param(filter.receivedUpToMs)}::BIGINT)`);
  if (after) {
    const ts = param(after.timestampMs);
    const id = param(after.eventId);
    const beyond = order === 'desc' ? '<' : '>';
    clauses.push(`(ts ${beyond} epoch_ms(${ts}::BIGINT) OR (ts = epoch_ms(${ts}::BIGINT) AND event_id ${beyond} ${id}::UUID))`);
  }
  return clauses.join(' AND ');
}
