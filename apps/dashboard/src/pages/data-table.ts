import { h } from '../dom';

/**
 * A table whose rows become labelled cards on narrow screens (each cell carries its column
 * name), so that no panel needs a sideways scroll.
 */
export function dataTable(caption: string, columns: string[], body: HTMLTableSectionElement, testId?: string): HTMLTableElement {
  return h(
    'table',
    { class: 'data-table', ...(testId ? { 'data-testid': testId } : {}) },
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, ...columns.map((c) => h('th', { scope: 'col' }, c)))),
    body,
  );
}

/** A row whose cells are labelled with their column names (shown beside the value on a phone). */
export function labelledRow(columns: string[], cells: Array<Node | string>, attrs: Record<string, string> = {}): HTMLTableRowElement {
  return h('tr', attrs, ...cells.map((cell, i) => {
    const td = h('td', { 'data-label': columns[i] ?? '' }, cell);
    return td;
  }));
}
