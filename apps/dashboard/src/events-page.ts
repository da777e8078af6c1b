import { api, ApiError } from './api';
import { h } from './dom';
import { format } from './overview/format';
import { countryOptions } from './pages/countries';
import { dataTable, labelledRow } from './pages/data-table';
import { downloadJson, exportUrl } from './pages/event-downloads';
import { eventTypeChoice } from './pages/event-type-choice';
import { localDateTime, localDayQuery } from './pages/local-days';
import { usePageStyles } from './pages/page-styles';

const PAGE_SIZE = 100;
/** The filters of the export, in the order of its parameters; each is kept in the page's URL. */
const FILTERS = ['campaignId', 'broadcastId', 'sponsorId', 'country', 'userId', 'event', 'from', 'to'] as const;

interface ExportedEvent {
  timestamp: string;
  event: string;
  broadcastId?: string;
  userId?: string | null;
  country?: string | null;
  data?: unknown;
}

const option = (value: string, label: string) => h('option', { value }, label);

/** Raw events, newest first, with every filter of the export and downloads of the filtered view. */
export async function renderEvents(root: HTMLElement): Promise<void> {
  usePageStyles();
  const params = new URLSearchParams(location.search);
  const [campaigns, broadcasts, sponsors, settings] = await Promise.all([
    api<{ data: Array<{ id: number; name: string }> }>('/v1/campaigns'),
    api<{ data: Array<{ id: string; title: string | null }> }>('/v1/broadcasts'),
    api<{ data: Array<{ id: string; name: string }> }>('/v1/sponsors'),
    api<{ timeZone?: string }>('/v1/settings'),
  ]);
  // The dates and times of the page are the tenant's (setting `timeZone`), as on the overview.
  const timeZone = settings.timeZone ?? 'UTC';
  const columns = [`Time (${timeZone})`, 'Event', 'Broadcast', 'User', 'Country', 'Data'];
  // The name is set on the control too: a label around a select would add the chosen option to it.
  const labelled = (text: string, control: HTMLElement) => {
    control.setAttribute('aria-label', text);
    return h('label', {}, text, control);
  };
  const controls = {
    campaignId: h('select', { name: 'campaignId' }, option('', 'All campaigns'), ...campaigns.data.map((c) => option(String(c.id), c.name))),
    broadcastId: h('select', { name: 'broadcastId' }, option('', 'All broadcasts'), ...broadcasts.data.map((b) => option(b.id, b.title ? `${b.title} (${b.id})` : b.id))),
    sponsorId: h('select', { name: 'sponsorId' }, option('', 'All sponsors'), ...sponsors.data.map((s) => option(s.id, s.name))),
    country: h('select', { name: 'country' }, option('', 'All countries'), ...countryOptions().map((c) => option(c.code, c.name))),
    userId: h('input', { name: 'userId', type: 'search', autocomplete: 'off', placeholder: 'Any user' }),
    from: h('input', { type: 'date', name: 'from' }),
    to: h('input', { type: 'date', name: 'to' }),
  };
  const eventTypes = eventTypeChoice('Event types', (params.get('event') ?? '').split(',').filter(Boolean));
  for (const [name, control] of Object.entries(controls)) control.value = params.get(name) ?? '';
  // Keep only values the lists know (a stale URL must not filter on something not shown).
  for (const select of [controls.campaignId, controls.broadcastId, controls.sponsorId, controls.country]) if (select.selectedIndex < 0) select.value = '';

  const csv = h('a', { class: 'button', download: '', 'data-testid': 'download-csv' }, 'Download CSV');
  const ndjson = h('a', { class: 'button', download: '', 'data-testid': 'download-ndjson' }, 'Download NDJSON');
  const json = h('button', { type: 'button', 'data-testid': 'download-json' }, 'Download JSON');
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'secondary', hidden: '' }, 'Load more');
  const status = h('p', { class: 'muted', role: 'status' }, 'Loading…');
  let cursor: string | null = null;
  let generation = 0;
  let controller: AbortController | null = null;

  const query = () => {
    const q = new URLSearchParams();
    for (const name of FILTERS) {
      if (name === 'event') {
        const chosen = eventTypes.selected();
        if (chosen.length) q.set('event', chosen.join(','));
        continue;
      }
      const value = controls[name].value.trim();
      if (value) q.set(name, value);
    }
    return q;
  };
  // The date inputs bound each other: an inverted range cannot be picked.
  const boundDates = () => {
    controls.to.min = controls.from.value;
    controls.from.max = controls.to.value;
  };

  const load = async (append: boolean) => {
    const q = query();
    const mine = ++generation;
    controller?.abort();
    controller = new AbortController();
    history.replaceState(history.state, '', `${location.pathname}${q.size ? `?${q}` : ''}`);
    // The URL keeps the days as picked; the export is asked for their local midnights.
    const sent = localDayQuery(q, timeZone);
    // Marketers open this file in spreadsheets: formula-like cells are neutralised.
    csv.href = exportUrl(sent, 'csv');
    ndjson.href = exportUrl(sent, 'ndjson');
    if (!append) cursor = null;
    const pageQuery = new URLSearchParams(sent);
    pageQuery.set('format', 'json');
    pageQuery.set('order', 'desc');
    pageQuery.set('limit', String(PAGE_SIZE));
    if (cursor) pageQuery.set('cursor', cursor);
    status.textContent = 'Loading…';
    try {
      const page = await api<{ data: ExportedEvent[]; nextCursor: string | null }>(`/v1/analytics/events?${pageQuery}`, { signal: controller.signal });
      if (mine !== generation) return;
      if (!append) body.replaceChildren();
      for (const e of page.data) {
        body.append(labelledRow(columns, [
          localDateTime(e.timestamp, timeZone), e.event, e.broadcastId ?? '–', e.userId ?? '–', e.country ?? '–', JSON.stringify(e.data ?? {}),
        ]));
        (body.lastElementChild!.lastElementChild as HTMLElement).classList.add('data');
      }
      cursor = page.nextCursor;
      more.hidden = !cursor;
      const shown = body.children.length;
      status.textContent = shown ? `${format.count(shown, 'event', 'events')} shown, newest first${cursor ? '' : ' (all of them)'}.` : 'No events for these filters.';
    } catch (error) {
      if (mine !== generation || (error instanceof DOMException && error.name === 'AbortError')) return;
      status.textContent = error instanceof ApiError ? error.message : 'The events could not be loaded.';
    }
  };
  json.addEventListener('click', () => {
    json.disabled = true;
    downloadJson(localDayQuery(query(), timeZone))
      .catch(() => (status.textContent = 'The JSON download failed.'))
      .finally(() => (json.disabled = false));
  });
  for (const control of Object.values(controls)) control.addEventListener('change', () => {
    boundDates();
    void load(false);
  });
  eventTypes.onChange(() => void load(false));
  more.addEventListener('click', () => void load(true));
  boundDates();

  const filters = h('form', { class: 'page-filters', role: 'search', 'aria-label': 'Event filters' },
    labelled('Campaign', controls.campaignId), labelled('Broadcast', controls.broadcastId), labelled('Sponsor', controls.sponsorId),
    labelled('Country', controls.country), labelled('User id', controls.userId), labelled('From', controls.from), labelled('To', controls.to));
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    void load(false);
  });
  root.replaceChildren(
    h('section', { class: 'panel', 'aria-label': 'Events' },
      h('h2', {}, 'Events'),
      filters,
      eventTypes.element,
      h('div', { class: 'actions' }, h('span', { class: 'muted' }, 'Download this view:'), csv, ndjson, json),
      status,
      dataTable('Events, newest first', columns, body, 'events-table'),
      more,
    ),
  );
  await load(false);
}
