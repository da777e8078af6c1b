/**
 * The same instant `months` calendar months earlier, in UTC. A day that does not exist in the
 * target month becomes its last day (31 March minus one month is 28 or 29 February).
 */
export function subtractMonths(ms: number, months: number): number {
  const date = new Date(ms);
  const totalMonths = date.getUTCFullYear() * 12 + date.getUTCMonth() - months;
  const year = Math.floor(totalMonths / 12);
  const month = totalMonths - year * 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(
    year,
    month,
    Math.min(date.getUTCDate(), lastDay),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
    date.getUTCMilliseconds(),
  );
}
