import { api, ApiError } from './api';
import { barChart, lineChart } from './charts';
import { coalesce } from './coalesce';
import { DEFINITIONS } from './definitions';
import { fmt, h } from './dom';
import { replacePanels } from './replace-panels';

const FILTERS = ['campaignId', 'broadcastId', 'from', 'to', 'country', 'sponsorId'] as const;
const PRESETS: Array<[string, number]> = [['Today', 0], ['7 days', 6], ['30 days', 29], ['90 days', 89]];
const PRIMARY = 'var(--chart)';
/** Live updates arrive up to four times a second; the screen follows at most once a second. */
const LIVE_RENDER_INTERVAL_MS = 1_000;

type Overview = any;

const day = (offsetDays: number) => new Date(Date.now() - offsetDays * 86_400_000).toISOString().slice(0, 10);

/** The filter state lives in the URL, so a view can be shared and a reload restores it. */
function readFilters(): URLSearchParams {
  const params = new URLSearchParams(location.search);
  const out = new URLSearchParams();
  for (const key of FILTERS) {
    const value = params.get(key);
    if (value) out.set(key, value);
  }
  if (!out.has('from')) out.set('from', day(6));
  return out;
}

function panel(title: string, definition: string, ...body: Node[]): HTMLElement {
  return h('section', { class: 'panel', 'aria-label': title }, h('h2', {}, title, h('span', { class: 'info', title: definition, tabindex: '0', role: 'img', 'aria-label': `How ${title} is computed: ${definition}` }, 'i')), ...body);
}

function stat(label: string, value: string, testId: string): HTMLElement {
  return h('div', { class: 'stat' }, h('div', { class: 'value', 'data-testid': testId }, value), h('div', { class: 'label' }, label));
}

export async function renderOverview(root: HTMLElement): Promise<() => void> {
  const filters = readFilters();
  const [campaigns, broadcasts, sponsors] = await Promise.all([
    api<{ data: Array<{ id: number; name: string }> }>('/v1/campaigns'),
    api<{ data: Array<{ id: string; title: string | null }> }>('/v1/broadcasts'),
    api<{ data: Array<{ id: string; name: string }> }>('/v1/sponsors'),
  ]);
  const select = (name: string, label: string, options: Array<[string, string]>) => {
    const control = h('select', { name, 'aria-label': label }, h('option', { value: '' }, `All ${label.toLowerCase()}s`));
    for (const [value, text] of options) control.append(h('option', { value }, text));
    control.value = filters.get(name) ?? '';
    return control;
  };
  const campaign = select('campaignId', 'Campaign', campaigns.data.map((c) => [String(c.id), c.name]));
  const broadcast = select('broadcastId', 'Broadcast', broadcasts.data.map((b) => [b.id, b.title ?? b.id]));
  const sponsor = select('sponsorId', 'Sponsor', sponsors.data.map((s) => [s.id, s.name]));
  const sponsorName = new Map(sponsors.data.map((s) => [s.id, s.name]));
  const broadcastName = new Map(broadcasts.data.map((b) => [b.id, b.title ?? b.id]));
  const country = h('input', { name: 'country', 'aria-label': 'Country', placeholder: 'Country (e.g. DE)', maxlength: '2', size: '4' });
  country.value = filters.get('country') ?? '';
  const from = h('input', { type: 'date', name: 'from', 'aria-label': 'From' });
  const to = h('input', { type: 'date', name: 'to', 'aria-label': 'To' });
  from.value = filters.get('from') ?? '';
  to.value = filters.get('to') ?? '';
  const presets = h('div', { class: 'presets' });
  for (const [label, days] of PRESETS) {
    const button = h('button', { type: 'button', class: 'secondary' }, label);
    button.addEventListener('click', () => {
      from.value = day(days);
      to.value = '';
      apply();
    });
    presets.append(button);
  }
  const live = h('input', { type: 'checkbox', name: 'live', role: 'switch' });
  live.checked = new URLSearchParams(location.search).get('live') === '1';
  const bar = h('form', { class: 'filters', role: 'search' }, campaign, broadcast, country, sponsor, from, to, presets, h('label', { class: 'live-switch' }, live, h('span', {}, 'Live'), h('span', { class: 'live-dot', 'aria-hidden': 'true' })));
  const panels = h('div', { class: 'panels' }, h('p', { class: 'muted' }, 'Loading…'));
  root.replaceChildren(bar, panels);

  let source: EventSource | null = null;
  const liveDraw = coalesce<Overview>((o) => draw(o), LIVE_RENDER_INTERVAL_MS);
  const liveViewers = coalesce<number>((live) => {
    const node = panels.querySelector('[data-testid="live-viewers"]');
    if (node) node.textContent = fmt.int(live);
  }, LIVE_RENDER_INTERVAL_MS);
  const query = () => {
    const params = new URLSearchParams();
    for (const [name, control] of [['campaignId', campaign], ['broadcastId', broadcast], ['country', country], ['sponsorId', sponsor], ['from', from], ['to', to]] as const) {
      const value = name === 'country' ? control.value.trim().toUpperCase() : control.value;
      if (value) params.set(name, value);
    }
    return params;
  };
  /** The view's URL: the filters, and live mode, so a shared link opens the same view. */
  const viewUrl = (params: URLSearchParams) => `${location.pathname}?${params}${live.checked ? `${params.toString() ? '&' : ''}live=1` : ''}`;
  const apply = () => {
    const params = query();
    history.replaceState(null, '', viewUrl(params));
    void load(params);
  };
  for (const control of [campaign, broadcast, sponsor, from, to]) control.addEventListener('change', apply);
  country.addEventListener('change', apply);
  bar.addEventListener('submit', (event) => {
    event.preventDefault();
    apply();
  });
  live.addEventListener('change', () => {
    history.replaceState(null, '', viewUrl(query()));
    connectLive();
  });

  function connectLive(): void {
    source?.close();
    source = null;
    liveDraw.cancel();
    liveViewers.cancel();
    if (!live.checked) return;
    source = new EventSource(`/v1/analytics/live?${query()}`);
    source.addEventListener('overview', (event) => liveDraw.push(JSON.parse((event as MessageEvent).data)));
    source.addEventListener('viewers', (event) => liveViewers.push(JSON.parse((event as MessageEvent).data).live));
  }

  async function load(params: URLSearchParams): Promise<void> {
    panels.setAttribute('aria-busy', 'true');
    try {
      draw(await api<Overview>(`/v1/analytics/overview?${params}`));
      connectLive();
    } catch (error) {
      const message = error instanceof ApiError ? error.message : 'The overview could not be loaded.';
      const retry = h('button', { type: 'button' }, 'Try again');
      retry.addEventListener('click', () => void load(params));
      panels.replaceChildren(h('div', { class: 'error', role: 'alert' }, message, ' ', retry));
    } finally {
      panels.removeAttribute('aria-busy');
    }
  }

  function draw(o: Overview): void {
    const empty = o.viewers.sessions === 0 && o.revenue.length === 0;
    if (empty) {
      panels.replaceChildren(h('div', { class: 'empty' }, h('h2', {}, 'No events for these filters'), h('p', {}, 'Widen the date range or clear a filter. Events appear here within a second of arriving.')));
      return;
    }
    const seriesBox = h('div', { class: 'chart' });
    const viewers = panel('Viewer count', DEFINITIONS.viewers, h('div', { class: 'stats' }, stat('watching now', fmt.int(o.viewers.live), 'live-viewers'), stat('peak', fmt.int(o.viewers.peak), 'peak'), stat('unique viewers', fmt.int(o.viewers.uniqueViewers), 'unique-viewers')), seriesBox);
    const engagement = panel('Engagement rate', DEFINITIONS.engagement, h('div', { class: 'stats' }, stat(`${fmt.int(o.engagement.engagedViewers)} of ${fmt.int(o.engagement.joinedViewers)} viewers interacted`, fmt.pct(o.engagement.rate), 'engagement-rate')));
    const pollList = h('div', {});
    for (const poll of o.polls.slice(0, 6)) {
      const box = h('div', { class: 'chart small' });
      pollList.append(h('h3', {}, `${poll.question} (${fmt.int(poll.totalVotes)} votes)`), box);
      barChart(box, poll.options.map((x: any) => `${x.option} ${fmt.pct(x.share)}`), poll.options.map((x: any) => x.votes), PRIMARY);
    }
    const polls = panel('Poll results', DEFINITIONS.polls, o.polls.length ? pollList : h('p', { class: 'muted' }, 'No votes yet.'));
    const sponsorRows = o.sponsors.map((s: any) =>
      h('tr', {}, h('td', {}, sponsorName.get(s.sponsorId) ?? s.sponsorId), h('td', {}, broadcastName.get(s.broadcastId) ?? s.broadcastId), h('td', {}, fmt.int(s.impressions)), h('td', {}, fmt.int(s.taps)), h('td', {}, fmt.pct(s.tapRate)), h('td', {}, fmt.pct(s.conversion)), h('td', {}, s.revenue.map((r: any) => fmt.money(r.amount, r.currency)).join(', ') || '–')),
    );
    const sponsorsPanel = panel(
      'Sponsor performance',
      DEFINITIONS.sponsors,
      o.sponsors.length
        ? h('div', { class: 'scroll' }, h('table', {}, h('thead', {}, h('tr', {}, ...['Sponsor', 'Broadcast', 'Impressions', 'Taps', 'Tap rate', 'Conversion', 'Revenue'].map((c) => h('th', { scope: 'col' }, c)))), h('tbody', {}, ...sponsorRows)))
        : h('p', { class: 'muted' }, 'No sponsor activity.'),
    );
    const revenue = panel(
      'Revenue',
      DEFINITIONS.revenue,
      o.revenue.length
        ? h('div', { class: 'stats' }, ...o.revenue.flatMap((r: any) => [stat(`gross (${r.currency})`, fmt.money(r.gross, r.currency), `gross-${r.currency}`), stat('orders', fmt.int(r.orders), `orders-${r.currency}`), stat('average order', fmt.money(r.averageOrderValue, r.currency), `aov-${r.currency}`), stat('items per order', r.itemsPerOrder.toFixed(2), `ipo-${r.currency}`)]))
        : h('p', { class: 'muted' }, 'No orders.'),
    );
    const funnelBox = h('div', { class: 'chart small' });
    const funnel = panel('Funnel', DEFINITIONS.funnel, funnelBox, h('ol', { class: 'steps' }, ...o.funnel.map((s: any) => h('li', {}, `${s.step}: ${fmt.int(s.sessions)} sessions (${fmt.pct(s.conversion)})`))));
    const note = o.filters.sponsorId ? h('p', { class: 'muted' }, 'The sponsor filter narrows sponsor performance, revenue and funnel; the other panels ignore it.') : null;
    lineChart(seriesBox, o.viewers.series, PRIMARY);
    barChart(funnelBox, o.funnel.map((s: any) => s.step), o.funnel.map((s: any) => s.sessions), PRIMARY);
    replacePanels(panels, [note, viewers, engagement, revenue, funnel, sponsorsPanel, polls].filter((x): x is HTMLElement => x !== null));
  }

  await load(filters);
  return () => {
    source?.close();
    liveDraw.cancel();
    liveViewers.cancel();
  };
}
