import { api } from './api';
import { h } from './dom';

/** The quarantine: rejected events with their reasons (kept 30 days). */
export async function renderRejected(root: HTMLElement): Promise<void> {
  const page = await api<{ data: any[] }>('/v1/rejected-events?limit=200');
  if (!page.data.length) {
    root.replaceChildren(h('div', { class: 'empty' }, h('h2', {}, 'No rejected events'), h('p', {}, 'Events refused in the last 30 days appear here with their reason.')));
    return;
  }
  root.replaceChildren(
    h('p', { class: 'muted' }, `${page.data.length} most recent rejects. Personal data in them is masked.`),
    h('div', { class: 'panel scroll' }, h('table', {},
      h('thead', {}, h('tr', {}, ...['Received (UTC)', 'Event', 'Code', 'Reason'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...page.data.map((r) => h('tr', {}, h('td', {}, r.receivedAt.replace('T', ' ').slice(0, 19)), h('td', {}, r.event ?? '–'), h('td', {}, h('code', {}, r.code)), h('td', {}, r.detail)))),
    )),
  );
}
