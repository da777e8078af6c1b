import { COUNTRY_PATTERN, EVENT_NAMES, isEventName, startOfLocalDay, SvcError, type FieldError } from '@svc/protocol';
import type { EventFilter, EventOrder } from '@svc/storage';

export type ExportFormat = 'json' | 'ndjson' | 'csv';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['json', 'ndjson', 'csv'];
export const DEFAULT_PAGE_LIMIT = 1_000;
export const MAX_PAGE_LIMIT = 10_000;
const DAY_MS = 86_400_000;

/** Query parameters of `GET /v1/analytics/events`, as strings from the URL. */
export interface ExportQueryParams {
  campaignId?: string;
  from?: string;
  to?: string;
  broadcastId?: string;
  userId?: string;
  sponsorId?: string;
  country?: string;
  event?: string;
  format?: string;
  limit?: string;
  cursor?: string;
  csvSafe?: string;
  order?: string;
}

export interface ExportQuery {
  /** The filter without tenant (the caller's token decides that). */
  filter: Omit<EventFilter, 'tenantSeq'>;
  format: ExportFormat | undefined;
  limit: number;
  cursor: string | undefined;
  /** CSV for spreadsheets: formula-like cells neutralised (`csvSafe=true`); default false, values as stored. */
  csvSafe: boolean;
  /** Order of JSON pages: `asc` (default, oldest first) or `desc` (newest first). Streams are always `asc`. */
  order: EventOrder;
}

const date = (what: string) => ({
  type: 'string',
  anyOf: [{ format: 'date' }, { format: 'date-time' }],
  description: `${what}: a calendar date (2026-11-01, a whole UTC day) or an ISO 8601 date-time with a time zone`,
});
const textId = (description: string) => ({ type: 'string', minLength: 1, maxLength: 128, description });

/**
 * The filter parameters (export, overview, live) as the OpenAPI document describes them: their
 * real types and formats. The URL's strings are checked by `parseExportQuery`, which names
 * each bad parameter; this is the description of what it accepts.
 */
export const EXPORT_FILTER_PARAMETERS = {
  campaignId: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Campaign id' },
  from: date('Start, inclusive'),
  to: date('End: a calendar date is inclusive, a date-time exclusive'),
  broadcastId: textId('Broadcast id'),
  userId: textId('Opaque user id'),
  sponsorId: textId('Sponsor id (commerce events and sponsor moments)'),
  country: { type: 'string', pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2 country code (any case)' },
} as const;

/** The parameters of the raw export beyond the filter, described as `EXPORT_FILTER_PARAMETERS` is. */
export const EXPORT_PAGE_PARAMETERS = {
  event: {
    type: 'array',
    items: { type: 'string', enum: [...EVENT_NAMES] },
    minItems: 1,
    description: 'Event names, comma-separated (`event=poll.voted,checkout.completed`)',
  },
  format: { type: 'string', enum: [...EXPORT_FORMATS], description: 'Overrides Accept: a JSON page, or an NDJSON or CSV stream of everything' },
  limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT, description: 'JSON page size' },
  cursor: { type: 'string', description: 'The `nextCursor` of the previous JSON page' },
  csvSafe: {
    type: 'string',
    enum: ['true', 'false'],
    default: 'false',
    description: "CSV for spreadsheets: cells starting with =, +, -, @, tab or CR get a leading ' (default false: values exactly as stored)",
  },
  order: {
    type: 'string',
    enum: ['asc', 'desc'],
    default: 'asc',
    description: 'Order of JSON pages by (timestamp, eventId): asc oldest first, desc newest first. NDJSON and CSV streams are always asc.',
  },
} as const;

/** Names of the filter parameters, for routes that take nothing else. */
export const EXPORT_FILTER_NAMES: readonly string[] = Object.keys(EXPORT_FILTER_PARAMETERS);

const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Validates the export parameters (only the `known` ones, when given). Calendar dates are inclusive UTC days (`to=2026-11-30`
 * takes the whole of that day); date-times make a half-open range [from, to). Every problem
 * is reported with the parameter it concerns.
 */
export function parseExportQuery(params: ExportQueryParams, known?: readonly string[], timeZone = 'UTC'): ExportQuery {
  const errors: FieldError[] = [];
  const fail = (name: string, message: string) => errors.push({ path: `/query/${name}`, code: 'invalid_value', message });
  const filter: ExportQuery['filter'] = {};
  // Routes that take only some of the parameters refuse the others, rather than ignore them.
  for (const name of known ? Object.keys(params) : []) {
    if (!known!.includes(name)) errors.push({ path: `/query/${name}`, code: 'unknown_field', message: 'is not a parameter of this route' });
  }
  // A repeated parameter arrives as an array: refuse it rather than guess which one was meant.
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && typeof value !== 'string') {
      throw new SvcError('validation_failed', `Invalid query parameter ${name}: must be given once.`, {
        errors: [{ path: `/query/${name}`, code: 'invalid_value', message: 'must be given once' }],
      });
    }
  }

  if (params.campaignId !== undefined) {
    const id = Number(params.campaignId);
    if (/^\d+$/.test(params.campaignId) && Number.isSafeInteger(id) && id > 0) filter.campaignId = id;
    else fail('campaignId', 'must be a positive integer');
  }
  const from = params.from === undefined ? undefined : parseBound(params.from, 'from', timeZone);
  const to = params.to === undefined ? undefined : parseBound(params.to, 'to', timeZone);
  if (from === null) fail('from', 'must be a calendar date (2026-11-01) or an ISO 8601 date-time with a time zone');
  else if (from !== undefined) filter.fromMs = from;
  if (to === null) fail('to', 'must be a calendar date (2026-11-30) or an ISO 8601 date-time with a time zone');
  else if (to !== undefined) filter.toMs = to;
  const inverted = filter.fromMs !== undefined && filter.toMs !== undefined && filter.fromMs >= filter.toMs;
  for (const name of ['broadcastId', 'userId', 'sponsorId'] as const) {
    const value = params[name];
    if (value === undefined) continue;
    if (value.length >= 1 && value.length <= 128) filter[name] = value;
    else fail(name, 'must be 1 to 128 characters');
  }
  if (params.country !== undefined) {
    const country = params.country.toUpperCase();
    if (new RegExp(COUNTRY_PATTERN).test(country)) filter.country = country;
    else fail('country', 'must be an ISO 3166-1 alpha-2 code such as DE');
  }
  if (params.event !== undefined) {
    const names = params.event.split(',').map((n) => n.trim()).filter(Boolean);
    const unknown = names.filter((n) => !isEventName(n));
    if (!names.length || unknown.length) fail('event', `must be a comma list of event names; unknown: ${unknown.join(', ') || '(empty)'}`);
    else filter.events = [...new Set(names)];
  }
  let format: ExportFormat | undefined;
  if (params.format !== undefined) {
    if ((EXPORT_FORMATS as readonly string[]).includes(params.format)) format = params.format as ExportFormat;
    else fail('format', `must be one of ${EXPORT_FORMATS.join(', ')}`);
  }
  let limit = DEFAULT_PAGE_LIMIT;
  if (params.limit !== undefined) {
    const parsed = Number(params.limit);
    if (/^\d+$/.test(params.limit) && parsed >= 1 && parsed <= MAX_PAGE_LIMIT) limit = parsed;
    else fail('limit', `must be an integer from 1 to ${MAX_PAGE_LIMIT}`);
  }
  let csvSafe = false;
  if (params.csvSafe !== undefined) {
    if (params.csvSafe === 'true' || params.csvSafe === 'false') csvSafe = params.csvSafe === 'true';
    else fail('csvSafe', 'must be true or false');
  }
  let order: EventOrder = 'asc';
  if (params.order !== undefined) {
    if (params.order === 'asc' || params.order === 'desc') order = params.order;
    else fail('order', 'must be asc or desc');
  }
  if (inverted && !errors.length) {
    throw new SvcError('invalid_range', `Invalid query parameter to: must be after from (${params.from} to ${params.to} is empty or inverted).`, {
      errors: [{ path: '/query/to', code: 'invalid_range', message: 'must be after from' }],
    });
  }
  if (errors.length) {
    throw new SvcError('validation_failed', `Invalid query parameter ${errors.map((e) => e.path.slice(7)).join(', ')}: ${errors[0]!.message}.`, { errors });
  }
  return { filter, format, limit, cursor: params.cursor, csvSafe, order };
}

/**
 * Epoch ms of a bound; a calendar date is a day of `timeZone` (the tenant's, for the dashboard),
 * and `to` as a calendar date means the end of that day. Null when invalid.
 */
function parseBound(value: string, which: 'from' | 'to', timeZone: string): number | null {
  const day = CALENDAR_DATE.exec(value);
  if (day) {
    const [year, month, date] = [Number(day[1]), Number(day[2]), Number(day[3])];
    const ms = Date.UTC(year, month - 1, date);
    const check = new Date(ms);
    if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== date) return null;
    if (timeZone === 'UTC') return which === 'to' ? ms + DAY_MS : ms;
    return startOfLocalDay(timeZone, year, month, which === 'to' ? date + 1 : date);
  }
  if (!DATE_TIME.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

/** The format asked for by an Accept header; json when nothing more specific is accepted. */
export function formatFromAccept(accept: string | undefined): ExportFormat | null {
  if (!accept) return 'json';
  const types = accept.split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  for (const type of types) {
    if (type === 'text/csv') return 'csv';
    if (type === 'application/x-ndjson' || type === 'application/jsonl' || type === 'application/ndjson') return 'ndjson';
    if (type === 'application/json' || type === 'application/*' || type === '*/*') return 'json';
  }
  return null;
}
