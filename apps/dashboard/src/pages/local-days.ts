import { startOfLocalDay } from '@svc/protocol';

const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The instant `date` (YYYY-MM-DD) starts in `timeZone`, `days` later; null for anything else. */
function localMidnight(date: string, timeZone: string, days = 0): string | null {
  const parts = CALENDAR_DATE.exec(date);
  if (!parts) return null;
  return new Date(startOfLocalDay(timeZone, Number(parts[1]), Number(parts[2]), Number(parts[3]) + days)).toISOString();
}

/**
 * The export's query for filters whose `from`/`to` are days of the tenant's `timeZone`: the
 * export reads plain dates as UTC days (its contract), so they are sent as the local midnights
 * that start `from` and end `to` ([from, to) date-times). Other values are left as they are.
 */
export function localDayQuery(q: URLSearchParams, timeZone: string): URLSearchParams {
  const sent = new URLSearchParams(q);
  const from = localMidnight(q.get('from') ?? '', timeZone);
  const to = localMidnight(q.get('to') ?? '', timeZone, 1);
  if (from) sent.set('from', from);
  if (to) sent.set('to', to);
  return sent;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** `2026-11-10 19:02:00`: an instant as the wall-clock time of `timeZone`. */
export function localDateTime(iso: string, timeZone: string): string {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    formats.set(timeZone, format);
  }
  const part: Record<string, string> = {};
  for (const p of format.formatToParts(new Date(iso))) part[p.type] = p.value;
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second}`;
}
