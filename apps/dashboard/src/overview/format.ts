/**
 * Numbers, money, shares and counted nouns in the user's own locale (the browser's first
 * language): 1,234.5 in English, 1.234,5 in German.
 */
const LOCALE = typeof navigator === 'undefined' ? 'en' : (navigator.languages?.[0] ?? navigator.language ?? 'en');

const integer = new Intl.NumberFormat(LOCALE, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(LOCALE, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const oneDecimal = new Intl.NumberFormat(LOCALE, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const percent = new Intl.NumberFormat(LOCALE, { style: 'percent', minimumFractionDigits: 1, maximumFractionDigits: 1 });
const plural = new Intl.PluralRules('en');

export const format = {
  locale: LOCALE,
  int: (n: number) => integer.format(n),
  decimal: (n: number) => decimal.format(n),
  oneDecimal: (n: number) => oneDecimal.format(n),
  /** A fraction (0.381) as a percentage with one decimal (38.1%). */
  pct: (n: number) => percent.format(n),
  money: (n: number, currency: string) => {
    try {
      return new Intl.NumberFormat(LOCALE, { style: 'currency', currency }).format(n);
    } catch {
      return `${decimal.format(n)} ${currency}`;
    }
  },
  /** "1 vote", "2 votes" (the labels are English; only the number follows the locale). */
  count: (n: number, one: string, other: string) => `${integer.format(n)} ${plural.select(n) === 'one' ? one : other}`,
};

/** The calendar date (YYYY-MM-DD) `daysAgo` days before now in `timeZone` (the tenant's). */
export function dateIn(timeZone: string, daysAgo = 0, nowMs = Date.now()): string {
  // en-CA writes dates as YYYY-MM-DD.
  const today = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(nowMs);
  const [y, m, d] = today.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d - daysAgo)).toISOString().slice(0, 10);
}

/** A bucket's start for labels and tables: the date for day buckets, date and time otherwise, in `timeZone`. */
export function bucketLabel(iso: string, bucketMs: number, timeZone: string): string {
  const options: Intl.DateTimeFormatOptions = bucketMs >= 86_400_000 ? { timeZone, dateStyle: 'medium' } : { timeZone, dateStyle: 'medium', timeStyle: 'short' };
  return new Intl.DateTimeFormat(LOCALE, options).format(new Date(iso));
}
