import { api, ApiError } from '../api';
import { h } from '../dom';
import { format } from '../overview/format';
import { dataTable, labelledRow } from './data-table';

interface Delivery {
  id: string;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  lastLatencyMs: number | null;
  createdAt: string;
}

const COLUMNS = ['Created (UTC)', 'Event', 'Status', 'Response', 'Attempts', 'Latency', 'Action'];
const PAGE_SIZE = 50;

/** The delivery log of one endpoint, newest first, filtered by status, with replay and paging. */
export function deliveryLog(endpointId: string, endpointUrl: string): { element: HTMLElement; refresh: () => Promise<void> } {
  const status = h('select', { name: 'status', 'aria-label': 'Delivery status' },
    h('option', { value: '' }, 'Every status'), h('option', { value: 'delivered' }, 'Delivered'), h('option', { value: 'pending' }, 'Pending'), h('option', { value: 'failed' }, 'Failed'));
  const body = h('tbody');
  const note = h('p', { class: 'muted', role: 'status' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: '' }, 'Load more');
  let cursor: string | null = null;
  let generation = 0;

  const load = async (append: boolean) => {
    const mine = ++generation;
    const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (status.value) q.set('status', status.value);
    if (append && cursor) q.set('cursor', cursor);
    try {
      const page = await api<{ data: Delivery[]; nextCursor: string | null }>(`/v1/webhooks/${encodeURIComponent(endpointId)}/deliveries?${q}`);
      if (mine !== generation) return;
      if (!append) body.replaceChildren();
      for (const d of page.data) {
        const replay = h('button', { type: 'button', class: 'secondary' }, 'Replay');
        replay.addEventListener('click', () => void api(`/v1/webhooks/${encodeURIComponent(endpointId)}/deliveries/${d.id}/replay`, { method: 'POST' })
          .then(() => load(false), (error) => (note.textContent = error instanceof ApiError ? error.message : 'The replay failed.')));
        const response = d.lastStatusCode !== null ? `HTTP ${d.lastStatusCode}` : d.lastError ?? '–';
        const row = labelledRow(COLUMNS, [
          d.createdAt.replace('T', ' ').slice(0, 19), d.event, d.status, response, String(d.attempts),
          d.lastLatencyMs === null ? '–' : `${d.lastLatencyMs} ms`, replay,
        ]);
        row.children[2]!.setAttribute('data-testid', 'delivery-status');
        body.append(row);
      }
      cursor = page.nextCursor;
      more.hidden = !cursor;
      note.textContent = body.children.length ? `${format.count(body.children.length, 'delivery', 'deliveries')} shown, newest first.` : 'No deliveries for this filter.';
    } catch (error) {
      if (mine === generation) note.textContent = error instanceof ApiError ? error.message : 'The delivery log could not be loaded.';
    }
  };
  status.addEventListener('change', () => void load(false));
  more.addEventListener('click', () => void load(true));
  const element = h('section', { 'data-testid': 'delivery-log', 'aria-label': 'Delivery log' },
    h('h3', {}, 'Delivery log of ', h('span', { class: 'url-cell' }, endpointUrl)),
    h('div', { class: 'page-filters' }, h('label', {}, 'Status', status)),
    note,
    dataTable(`Deliveries to ${endpointUrl}`, COLUMNS, body),
    more,
  );
  return { element, refresh: () => load(false) };
}
