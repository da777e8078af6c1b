/**
 * Numbers, money, shares and counted nouns in the user's own locale (the browser's first
 * language): 1,234.5 in English, 1.234,5 in German.
 */
const LOCALE = typeof navigator === 'undefined' ? 'en' : (navigator.languages?.[0] ?? navigator.language ?? 'en');

const integer = new Intl.NumberFormat(LOCALE, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(LOCALE, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const percent = new Intl.NumberFormat(LOCALE, { style: 'percent', minimumFractionDigits: 1, maximumFractionDigits: 1 });
const plural = new Intl.PluralRules('en');

export const format = {
  locale: LOCALE,
  int: (n: number) => integer.format(n),
  decimal: (n: number) => decimal.format(n),
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
