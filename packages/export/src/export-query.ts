import { COUNTRY_PATTERN, isEventName, SvcError, type FieldError } from '@svc/protocol';
import type { EventFilter } from '@svc/storage';

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
}

export interface ExportQuery {
  /** The filter without tenant (the caller's token decides that). */
  filter: Omit<EventFilter, 'tenantSeq'>;
  format: ExportFormat | undefined;
  limit: number;
  cursor: string | undefined;
  /** CSV for spreadsheets: formula-like cells neutralised (`csvSafe=true`); default false, values as stored. */
  csvSafe: boolean;
}

const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Validates the export parameters. Calendar dates are inclusive UTC days (`to=2026-11-30`
 * takes the whole of that day); date-times make a half-open range [from, to). Every problem
 * is reported with the parameter it concerns.
 */
export function parseExportQuery(params: ExportQueryParams): ExportQuery {
  const errors: FieldError[] = [];
  const fail = (name: string, message: string) => errors.push({ path: `/query/${name}`, code: 'invalid_value', message });
  const filter: ExportQuery['filter'] = {};
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
  const from = params.from === undefined ? undefined : parseBound(params.from, 'from');
  const to = params.to === undefined ? undefined : parseBound(params.to, 'to');
  if (from === null) fail('from', 'must be a calendar date (2026-11-01) or an ISO 8601 date-time with a time zone');
  else if (from !== undefined) filter.fromMs = from;
  if (to === null) fail('to', 'must be a calendar date (2026-11-30) or an ISO 8601 date-time with a time zone');
  else if (to !== undefined) filter.toMs = to;
  if (filter.fromMs !== undefined && filter.toMs !== undefined && filter.fromMs >= filter.toMs) {
    fail('to', 'must be after from');
  }
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
  if (errors.length) {
    throw new SvcError('validation_failed', `Invalid query parameter ${errors.map((e) => e.path.slice(7)).join(', ')}: ${errors[0]!.message}.`, { errors });
  }
  return { filter, format, limit, cursor: params.cursor, csvSafe };
}

/** Epoch ms of a bound; `to` as a calendar date means the end of that day. Null when invalid. */
function parseBound(value: string, which: 'from' | 'to'): number | null {
  const day = CALENDAR_DATE.exec(value);
  if (day) {
    const [year, month, date] = [Number(day[1]), Number(day[2]), Number(day[3])];
    const ms = Date.UTC(year, month - 1, date);
    const check = new Date(ms);
    if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== date) return null;
    return which === 'to' ? ms + DAY_MS : ms;
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
