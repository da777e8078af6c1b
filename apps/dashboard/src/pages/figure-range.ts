import { h } from '../dom';
import { boundDates } from '../overview/date-range';
import { dateIn } from '../overview/format';

/** Without a range in the URL the figures cover the last 30 days of the tenant, today included. */
export const DEFAULT_FIGURE_DAYS = 30;

export interface FigureRange {
  /** Inclusive calendar days (YYYY-MM-DD) of `timeZone`, as the analytics API reads them. */
  from: string;
  to: string;
  timeZone: string;
}

/** "figures of 2026-11-01 to 2026-11-30 (Europe/Berlin)". */
export const rangeLabel = (range: FigureRange) => `figures of ${range.from} to ${range.to} (${range.timeZone})`;

/**
 * The days the per-broadcast figures cover: From and To date inputs (bound to each other, never
 * past today), days of the tenant's time zone, kept in the URL as `from`/`to` (the overview's
 * names, so that the figures follow a range taken from there). `changed` runs after each change.
 */
export function figureRangeControls(timeZone: string, changed: (range: FigureRange) => void): { element: HTMLElement; range: () => FigureRange } {
  const params = new URLSearchParams(location.search);
  const today = () => dateIn(timeZone, 0);
  const from = h('input', { type: 'date', name: 'from', 'aria-label': 'Figures from' });
  const to = h('input', { type: 'date', name: 'to', 'aria-label': 'Figures to' });
  from.value = params.get('from') ?? dateIn(timeZone, DEFAULT_FIGURE_DAYS - 1);
  to.value = params.get('to') ?? '';
  boundDates(from, to, today);
  const range = (): FigureRange => ({ from: from.value || dateIn(timeZone, DEFAULT_FIGURE_DAYS - 1), to: to.value || today(), timeZone });
  const onChange = () => {
    const q = new URLSearchParams(location.search);
    q.set('from', range().from);
    if (to.value) q.set('to', to.value);
    else q.delete('to');
    history.replaceState(history.state, '', `${location.pathname}?${q}`);
    changed(range());
  };
  from.addEventListener('change', onChange);
  to.addEventListener('change', onChange);
  const element = h('form', { class: 'page-filters', role: 'search', 'aria-label': 'Days of the figures' },
    h('label', {}, 'Figures from', from),
    h('label', {}, 'Figures to', to),
    h('span', { class: 'muted', 'data-testid': 'figure-time-zone' }, `Days in ${timeZone}`));
  element.addEventListener('submit', (event) => event.preventDefault());
  return { element, range };
}
