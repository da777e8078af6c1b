import { h } from '../dom';

/**
 * The numbers behind a chart as a table, for screen readers and for reading exact values:
 * folded under the chart (a native disclosure, reachable by keyboard and touch).
 */
export function dataTable(caption: string, columns: string[], rows: Array<Array<string>>, testId: string): HTMLElement {
  return h(
    'details',
    { class: 'data-table' },
    h('summary', {}, `${caption}: data table`),
    h(
      'div',
      { class: 'scroll', tabindex: '0', role: 'region', 'aria-label': `${caption} data` },
      h(
        'table',
        { 'data-testid': testId },
        h('caption', { class: 'visually-hidden' }, caption),
        h('thead', {}, h('tr', {}, ...columns.map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((cell, i) => (i === 0 ? h('th', { scope: 'row' }, cell) : h('td', {}, cell)))))),
      ),
    ),
  );
}
