/**
 * Local time in an IANA time zone (the tenant's setting), with nothing but `Intl`: the offset
 * from UTC at an instant, and the instant of a local wall-clock time. Daylight saving time is
 * taken into account at each instant.
 */
export const DEFAULT_TIME_ZONE = 'UTC';

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    formatters.set(timeZone, format);
  }
  return format;
}

/** Whether `name` is an IANA time zone this runtime knows (`Europe/Berlin`, `UTC`). */
export function isTimeZone(name: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(name)) return false;
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

/** Milliseconds to add to UTC to get the local time of `timeZone` at the instant `atMs`. */
export function zoneOffsetMs(timeZone: string, atMs: number): number {
  if (timeZone === 'UTC') return 0;
  const wholeSecond = Math.floor(atMs / 1000) * 1000;
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(wholeSecond)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const local = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return local - wholeSecond;
}

/** The instant of a local wall-clock time (epoch ms as if the local time were UTC). */
export function instantOfLocal(timeZone: string, localMs: number): number {
  const guess = localMs - zoneOffsetMs(timeZone, localMs);
  return localMs - zoneOffsetMs(timeZone, guess);
}

/** The instant local midnight starts the calendar day `year-month-day` (month 1–12). */
export function startOfLocalDay(timeZone: string, year: number, month: number, day: number): number {
  return instantOfLocal(timeZone, Date.UTC(year, month - 1, day));
}

/** The calendar date (YYYY-MM-DD) at the instant `atMs` in `timeZone`. */
export function localDate(timeZone: string, atMs: number): string {
  return new Date(atMs + zoneOffsetMs(timeZone, atMs)).toISOString().slice(0, 10);
}
