/** Ticks on whole numbers from 0 to at least `max`: steps of 1, 2 or 5 × 10^k, about `count` of them. */
export function valueTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0, 1];
  const rough = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? 10 * magnitude);
  const ticks: number[] = [];
  for (let v = 0; v < max + step; v += step) ticks.push(v);
  return ticks;
}

/** How a time axis labels its ticks: hours and minutes within two days, else the date. */
export function timeLabeller(spanMs: number, timeZone?: string): (ms: number) => string {
  const TWO_DAYS_MS = 2 * 86_400_000;
  const format = new Intl.DateTimeFormat(undefined, spanMs <= TWO_DAYS_MS ? { hour: '2-digit', minute: '2-digit', timeZone } : { month: 'short', day: 'numeric', timeZone });
  return (ms) => format.format(ms);
}

/** The full date and time of one point, for the tooltip. */
export function fullTime(ms: number, timeZone?: string): string {
  return new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone }).format(ms);
}
