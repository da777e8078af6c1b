import { api } from './api';
import { h } from './dom';
import { dataTable, labelledRow } from './pages/data-table';
import { usePageStyles } from './pages/page-styles';

const COLUMNS = ['Received (UTC)', 'Event', 'Code', 'Reason'];

/** The quarantine: rejected events with their reasons (kept 30 days). */
export async function renderRejected(root: HTMLElement): Promise<void> {
  usePageStyles();
  const page = await api<{ data: any[] }>('/v1/rejected-events?limit=200');
  if (!page.data.length) {
    root.replaceChildren(h('div', { class: 'empty' }, h('h2', {}, 'No rejected events'), h('p', {}, 'Events refused in the last 30 days appear here with their reason.')));
    return;
  }
  root.replaceChildren(
    h('section', { class: 'panel', 'aria-labelledby': 'rejected-title' },
      h('h2', { id: 'rejected-title' }, 'Rejected events'),
      h('p', { class: 'muted' }, `${page.data.length} most recent rejects, newest first. Personal data in them is masked.`),
      dataTable('Rejected events', COLUMNS, h('tbody', {}, ...page.data.map((r) => labelledRow(COLUMNS, [
        r.receivedAt.replace('T', ' ').slice(0, 19), r.event ?? '–', h('code', { class: 'url-cell' }, r.code), r.detail,
      ]))), 'rejected-table'),
    ),
  );
}
