import { api } from './api';
import { h } from './dom';

const EVENT_NAMES = [
  'broadcast.joined', 'broadcast.left', 'poll.viewed', 'poll.voted', 'contest.viewed', 'contest.entered', 'lineup.viewed',
  'sponsor_moment.viewed', 'sponsor_moment.tapped', 'product.viewed', 'product.tapped', 'cart.item_added', 'cart.item_removed',
  'checkout.started', 'checkout.completed', 'checkout.abandoned',
];

/** Raw events with filters and downloads (CSV, NDJSON) through the export endpoint. */
export async function renderEvents(root: HTMLElement): Promise<void> {
  const params = new URLSearchParams(location.search);
  const broadcast = h('input', { name: 'broadcastId', 'aria-label': 'Broadcast id', placeholder: 'Broadcast id' });
  const event = h('select', { name: 'event', 'aria-label': 'Event' }, h('option', { value: '' }, 'All events'), ...EVENT_NAMES.map((n) => h('option', { value: n }, n)));
  const from = h('input', { type: 'date', name: 'from', 'aria-label': 'From' });
  const to = h('input', { type: 'date', name: 'to', 'aria-label': 'To' });
  broadcast.value = params.get('broadcastId') ?? '';
  event.value = params.get('event') ?? '';
  from.value = params.get('from') ?? '';
  to.value = params.get('to') ?? '';
  const csv = h('a', { class: 'button', download: '', 'data-testid': 'download-csv' }, 'Download CSV');
  const ndjson = h('a', { class: 'button', download: '', 'data-testid': 'download-json' }, 'Download JSON');
  const table = h('tbody');
  const more = h('button', { type: 'button', class: 'secondary', hidden: '' }, 'Load more');
  const status = h('p', { class: 'muted' }, 'Loading…');
  let cursor: string | null = null;

  const query = () => {
    const q = new URLSearchParams();
    if (broadcast.value.trim()) q.set('broadcastId', broadcast.value.trim());
    if (event.value) q.set('event', event.value);
    if (from.value) q.set('from', from.value);
    if (to.value) q.set('to', to.value);
    return q;
  };
  const load = async (append: boolean) => {
    const q = query();
    history.replaceState(null, '', `${location.pathname}?${q}`);
    // Marketers open this file in spreadsheets: formula-like cells are neutralised.
    csv.setAttribute('href', `/v1/analytics/events?${q}&format=csv&csvSafe=true`);
    ndjson.setAttribute('href', `/v1/analytics/events?${q}&format=ndjson`);
    if (!append) cursor = null;
    const page = await api<{ data: any[]; nextCursor: string | null }>(`/v1/analytics/events?${q}&format=json&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    if (!append) table.replaceChildren();
    for (const e of page.data) {
      table.append(h('tr', {}, h('td', {}, e.timestamp.replace('T', ' ').slice(0, 19)), h('td', {}, e.event), h('td', {}, e.broadcastId), h('td', {}, e.userId ?? '–'), h('td', {}, e.country ?? '–'), h('td', { class: 'data' }, JSON.stringify(e.data))));
    }
    cursor = page.nextCursor;
    more.hidden = !cursor;
    status.textContent = table.children.length ? `${table.children.length} events shown, oldest first.` : 'No events for these filters.';
  };
  for (const control of [broadcast, event, from, to]) control.addEventListener('change', () => void load(false));
  more.addEventListener('click', () => void load(true));
  root.replaceChildren(
    h('form', { class: 'filters', role: 'search' }, broadcast, event, from, to, csv, ndjson),
    status,
    h('div', { class: 'panel scroll' }, h('table', {}, h('thead', {}, h('tr', {}, ...['Time (UTC)', 'Event', 'Broadcast', 'User', 'Country', 'Data'].map((c) => h('th', { scope: 'col' }, c)))), table)),
    more,
  );
  await load(false);
}
