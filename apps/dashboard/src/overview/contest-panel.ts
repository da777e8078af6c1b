import { h } from '../dom';
import { format } from './format';

export interface ContestView {
  contestId: string;
  entries: number;
  entrants: number;
}

/** Entries per contest, most first, as a table (it reads at every width). */
export function contestTable(contests: ContestView[]): HTMLElement {
  if (!contests.length) return h('p', { class: 'muted' }, 'No contest entries.');
  return h(
    'div',
    { class: 'scroll', tabindex: '0', role: 'region', 'aria-label': 'Contest entries' },
    h(
      'table',
      { 'data-testid': 'contest-table' },
      h('thead', {}, h('tr', {}, ...['Contest', 'Entries', 'Entrants'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...contests.map((c) => h('tr', {}, h('th', { scope: 'row' }, c.contestId), h('td', {}, format.int(c.entries)), h('td', {}, format.int(c.entrants))))),
    ),
  );
}
