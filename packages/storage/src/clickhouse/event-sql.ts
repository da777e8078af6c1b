import type { EventName, StoredEvent } from '@svc/protocol';
import type { EventFilter, EventOrder, EventPosition } from '../event-store';
import type { EventRow } from '../records';
import { chNumber, type ChRow } from './ch-database';
import { DATA_FIELD_COLUMNS, dataFieldValues } from './data-fields';
import { sqlInteger, sqlList, sqlString } from './sql-literal';

/**
 * The event id as text. Events are ordered by it as text, as on every other backend:
 * ClickHouse orders the UUID type by its two 64-bit halves, not as the text reads
 * ('00000000-0000-0001-…' sorts before 'f0000000-…' on 18.16).
 */
export const EVENT_ID_TEXT = 'toString(event_id)';

/** The export and paging order: event time, then event id as text. Duplicates sit side by side. */
export const EVENT_ORDER = `timestamp_ms, ${EVENT_ID_TEXT}`;
/** The paging order newest first: both keys reversed, so copies still sit side by side. */
export const EVENT_ORDER_DESC = `timestamp_ms DESC, ${EVENT_ID_TEXT} DESC`;

/** Columns of a stored event, in the shape `toStoredEvent` reads. */
export const EVENT_SELECT = `${EVENT_ID_TEXT} AS event_id, event, user_id, session_id, broadcast_id, campaign_id,
  timestamp_ms, received_at_ms, country, order_id, sponsor_id, total, items, data`;

/** The row of an event as stored (JSONEachRow): 64-bit integers are strings. */
export interface StoredEventRow {
  event_id: string;
  event: string;
  user_id: string | null;
  session_id: string;
  broadcast_id: string;
  campaign_id: string | number;
  timestamp_ms: string | number;
  received_at_ms: string | number;
  country: string | null;
  order_id: string | null;
  sponsor_id: string | null;
  total: number | null;
  items: string | null;
  data: string;
}

/** WHERE clause of an event filter; every value through sql-literal, column names from this file only. */
export function eventWhere(filter: EventFilter, after?: EventPosition, order: EventOrder = 'asc'): string {
  const clauses = [`tenant_seq = ${sqlInteger(filter.tenantSeq)}`];
  if (filter.campaignId !== undefined) clauses.push(`campaign_id = ${sqlInteger(filter.campaignId)}`);
  if (filter.fromMs !== undefined) clauses.push(`timestamp_ms >= ${sqlInteger(filter.fromMs)}`);
  if (filter.toMs !== undefined) clauses.push(`timestamp_ms < ${sqlInteger(filter.toMs)}`);
  if (filter.broadcastId !== undefined) clauses.push(`broadcast_id = ${sqlString(filter.broadcastId)}`);
  if (filter.userId !== undefined) clauses.push(`user_id = ${sqlString(filter.userId)}`);
  if (filter.country !== undefined) clauses.push(`country = ${sqlString(filter.country)}`);
  if (filter.sponsorId !== undefined) {
    const sponsor = sqlString(filter.sponsorId);
    // The top-level `sponsorId` of `data`, as its column holds it (data-fields.ts).
    clauses.push(`(sponsor_id = ${sponsor} OR (sponsor_id IS NULL AND data_sponsor_id = ${sponsor}))`);
  }
  if (filter.events?.length) clauses.push(`event IN ${sqlList(filter.events)}`);
  if (filter.receivedUpToMs !== undefined) clauses.push(`received_at_ms <= ${sqlInteger(filter.receivedUpToMs)}`);
  if (after) {
    const ts = sqlInteger(after.timestampMs);
    const beyond = order === 'desc' ? '<' : '>';
    clauses.push(`(timestamp_ms ${beyond} ${ts} OR (timestamp_ms = ${ts} AND ${EVENT_ID_TEXT} ${beyond} ${sqlString(after.eventId.toLowerCase())}))`);
  }
  return clauses.join(' AND ');
}

/** A lone surrogate has no UTF-8 form: stored as U+FFFD, as the embedded backend stores it. */
function wellFormed<T extends string | null>(text: T): T {
  return (text === null || text.isWellFormed() ? text : text.toWellFormed()) as T;
}

/** The JSONEachRow row `events` stores for an event. */
export function toInsertRow(e: EventRow): Record<string, unknown> {
  return {
    tenant_seq: e.tenantSeq,
    event_id: e.eventId.toLowerCase(),
    event: wellFormed(e.event),
    user_id: wellFormed(e.userId),
    session_id: wellFormed(e.sessionId),
    broadcast_id: wellFormed(e.broadcastId),
    campaign_id: e.campaignId,
    timestamp_ms: e.timestampMs,
    received_at_ms: e.receivedAtMs,
    country: wellFormed(e.country),
    order_id: wellFormed(e.orderId),
    sponsor_id: wellFormed(e.sponsorId),
    total: e.total,
    items: wellFormed(e.items),
    data: wellFormed(e.data),
    ...dataFieldValues(e.data),
  };
}

/** The members of the lines of releases before the columns of data's fields (ClickHouse migration 5). */
export const EARLIER_LINE_COLUMNS = [
  'tenant_seq', 'event_id', 'event', 'user_id', 'session_id', 'broadcast_id', 'campaign_id', 'timestamp_ms', 'received_at_ms', 'country', 'order_id',
  'sponsor_id', 'total', 'items', 'data',
] as const;

/** The members of an `insertLine`, in its order: the columns its insert names. */
export const INSERT_LINE_COLUMNS = [...EARLIER_LINE_COLUMNS, ...DATA_FIELD_COLUMNS.map(([column]) => column)] as const;

const FIELDS_MEMBER = Buffer.from('"data_sponsor_id":');

/** Whether encoded lines (one node's, all alike) carry the columns of data's fields: their first line tells. */
export function carriesDataFields(lines: Uint8Array): boolean {
  const text = Buffer.from(lines.buffer, lines.byteOffset, lines.byteLength);
  const end = text.indexOf(10);
  return text.subarray(0, end === -1 ? text.length : end).includes(FIELDS_MEMBER);
}

/**
 * The row of an event as a JSONEachRow line, without its newline: what a node publishes for the
 * writer. The same text as `JSON.stringify(toInsertRow(e))`, written directly: it runs for every
 * ingested event, and the template costs half of building and serializing the object.
 */
export function insertLine(e: EventRow): string {
  return (
    `{"tenant_seq":${jsonNumber(e.tenantSeq)},"event_id":${jsonId(e.eventId.toLowerCase())},"event":${jsonText(e.event)},` +
    `"user_id":${jsonText(e.userId)},"session_id":${jsonText(e.sessionId)},"broadcast_id":${jsonText(e.broadcastId)},` +
    `"campaign_id":${jsonNumber(e.campaignId)},"timestamp_ms":${jsonNumber(e.timestampMs)},"received_at_ms":${jsonNumber(e.receivedAtMs)},` +
    `"country":${jsonText(e.country)},"order_id":${jsonText(e.orderId)},"sponsor_id":${jsonText(e.sponsorId)},"total":${jsonNumber(e.total)},` +
    `"items":${jsonText(e.items)},"data":${jsonText(e.data)},${dataFieldsText(e.data)}}`
  );
}

/** Whether JSON text may hold one of the fields (as a key, or a string that would need a parse to tell). */
const MAY_HOLD_FIELD = /"(?:sponsorId|pollId|optionIndex|optionSelected|contestId|currency)"/;
/** The members of `data` without any of the fields: most events' (joins, views, heartbeats). */
const NO_FIELDS = dataFieldsMembers(dataFieldValues('{}'));

/** The columns of `data`'s fields (data-fields.ts) as members of a JSONEachRow line. */
function dataFieldsText(data: string): string {
  return MAY_HOLD_FIELD.test(data) ? dataFieldsMembers(dataFieldValues(data)) : NO_FIELDS;
}

function dataFieldsMembers(f: ReturnType<typeof dataFieldValues>): string {
  return DATA_FIELD_COLUMNS.map(([column]) => `"${column}":${jsonText(f[column])}`).join(',');
}

/** A text as JSON.stringify writes the well-formed text (null as `null`). */
function jsonText(text: string | null): string {
  if (text === null) return 'null';
  return needsEscape(text) ? JSON.stringify(text.isWellFormed() ? text : text.toWellFormed()) : `"${text}"`;
}

/**
 * Whether JSON.stringify would escape a character of `text` (or it holds a surrogate). Most
 * texts (ids, names) hold none: quoted directly, they cost half of JSON.stringify's call.
 */
function needsEscape(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return true;
  }
  return false;
}

/** The id as JSON.stringify writes it (kept as it is, as `toInsertRow` keeps it). */
function jsonId(id: string): string {
  return needsEscape(id) ? JSON.stringify(id) : `"${id}"`;
}

/** A number as JSON.stringify writes it (`null` for null and what is not finite). */
function jsonNumber(value: number | null): string {
  return value === null || !Number.isFinite(value) ? 'null' : String(value);
}

/** The event of a line `insertLine` wrote (for a sink other than ClickHouse). */
export function fromInsertLine(line: string): EventRow {
  const r = JSON.parse(line) as Record<string, unknown> & { [K in keyof InsertRow]: InsertRow[K] };
  return {
    tenantSeq: r.tenant_seq, eventId: r.event_id, event: r.event, userId: r.user_id, sessionId: r.session_id, broadcastId: r.broadcast_id,
    campaignId: r.campaign_id, timestampMs: r.timestamp_ms, receivedAtMs: r.received_at_ms, country: r.country, orderId: r.order_id,
    sponsorId: r.sponsor_id, total: r.total, items: r.items, data: r.data,
  };
}

interface InsertRow {
  tenant_seq: number; event_id: string; event: string; user_id: string | null; session_id: string; broadcast_id: string; campaign_id: number;
  timestamp_ms: number; received_at_ms: number; country: string | null; order_id: string | null; sponsor_id: string | null;
  total: number | null; items: string | null; data: string;
}

export function toStoredEvent(row: StoredEventRow | ChRow): StoredEvent {
  const r = row as StoredEventRow;
  return {
    eventId: r.event_id,
    event: r.event as EventName,
    userId: r.user_id,
    sessionId: r.session_id,
    broadcastId: r.broadcast_id,
    campaignId: chNumber(r.campaign_id),
    timestamp: new Date(chNumber(r.timestamp_ms)).toISOString(),
    receivedAt: new Date(chNumber(r.received_at_ms)).toISOString(),
    country: r.country,
    data: JSON.parse(r.data) as Record<string, unknown>,
    orderId: r.order_id,
    sponsorId: r.sponsor_id,
    items: r.items === null ? null : (JSON.parse(r.items) as StoredEvent['items']),
    total: r.total,
  };
}
