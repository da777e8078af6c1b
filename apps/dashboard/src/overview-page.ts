import { api, ApiError } from './api';
import { barChart, lineChart } from './charts';
import { coalesce } from './coalesce';
import { DEFINITIONS } from './definitions';
import { DEFINITIONS_EXTRA } from './overview/definitions-extra';
import { h } from './dom';
import { replacePanels } from './replace-panels';
import { dataTable as responsiveTable, labelledRow } from './pages/data-table';
import { usePageStyles } from './pages/page-styles';
import { boundDates } from './overview/date-range';
import { LatestRequest } from './overview/latest-request';
import { pollResults } from './overview/poll-panel';
import { dataTable } from './overview/data-table';
import { bucketLabel, dateIn, format } from './overview/format';
import { addOverviewStyles } from './overview/overview-styles';
import { comparison } from './overview/compare';
import { contestTable } from './overview/contest-panel';
import { CountryFilter } from './overview/country-filter';

const FILTERS = ['campaignId', 'broadcastId', 'from', 'to', 'country', 'sponsorId'] as const;
const PRESETS: Array<[string, number]> = [['Today', 0], ['7 days', 6], ['30 days', 29], ['90 days', 89]];
const PRIMARY = 'var(--chart)';
/** Live updates arrive up to four times a second; the screen follows at most once a second. */
const LIVE_RENDER_INTERVAL_MS = 1_000;

type Overview = any;

/** The filter state lives in the URL, so a view can be shared and a reload restores it. */
function readFilters(day: (daysAgo: number) => string): URLSearchParams {
  const params = new URLSearchParams(location.search);
  const out = new URLSearchParams();
  for (const key of FILTERS) {
    const value = params.get(key);
    if (value) out.set(key, value);
  }
  if (!out.has('from')) out.set('from', day(6));
  return out;
}

/** A panel whose definition opens under its title with a button: by click, tap, Enter or Space (not hover only). */
function panel(title: string, definition: string, ...body: Node[]): HTMLElement {
  const text = h('p', { class: 'definition', hidden: '' }, definition);
  const info = h('button', { type: 'button', class: 'info', 'aria-expanded': 'false', 'aria-label': `How ${title} is computed`, title: definition }, 'i');
  info.addEventListener('click', () => {
    text.hidden = !text.hidden;
    info.setAttribute('aria-expanded', String(!text.hidden));
  });
  return h('section', { class: 'panel', 'aria-label': title }, h('h2', {}, title, info), text, ...body);
}

function stat(label: string, value: string, testId: string, change?: HTMLElement): HTMLElement {
  return h('div', { class: 'stat' }, h('div', { class: 'value', 'data-testid': testId }, value), h('div', { class: 'label' }, label), change);
}

export async function renderOverview(root: HTMLElement): Promise<() => void> {
  addOverviewStyles();
  usePageStyles();
  const requests = new LatestRequest();
  const settingsAnswer = api<{ timeZone?: string }>('/v1/settings');
  // The numbers do not wait for the filter lists: with a start in the URL they are asked at
  // once, without one as soon as the time zone (which sets the default start) is known.
  const firstFilters = new URLSearchParams(location.search).get('from')
    ? Promise.resolve(readFilters(() => ''))
    : settingsAnswer.then((s) => readFilters((daysAgo) => dateIn(s.timeZone ?? 'UTC', daysAgo)));
  const firstSignal = requests.start();
  const firstAnswer = firstFilters.then((params) => api<Overview>(`/v1/analytics/overview?${params}`, { signal: firstSignal }));
  // Its failure is shown by load() below; the page may also fail earlier, on the lists.
  firstAnswer.catch(() => undefined);
  let lists;
  try {
    lists = await Promise.all([
      api<{ data: Array<{ id: number; name: string }> }>('/v1/campaigns'),
      api<{ data: Array<{ id: string; title: string | null }> }>('/v1/broadcasts'),
      api<{ data: Array<{ id: string; name: string }> }>('/v1/sponsors'),
      settingsAnswer,
    ]);
  } catch (error) {
    requests.cancel();
    throw error;
  }
  const [campaigns, broadcasts, sponsors, settings] = lists;
  // Days, presets, buckets and labels are those of the tenant's time zone (a setting; UTC by default).
  let timeZone = settings.timeZone ?? 'UTC';
  const day = (daysAgo: number) => dateIn(timeZone, daysAgo);
  const filters = readFilters(day);
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
  let chosenCountry = (filters.get('country') ?? '').toUpperCase();
  const countryFilter = new CountryFilter(chosenCountry);
  const country = countryFilter.input;
  const from = h('input', { type: 'date', name: 'from', 'aria-label': 'From' });
  const to = h('input', { type: 'date', name: 'to', 'aria-label': 'To' });
  from.value = filters.get('from') ?? '';
  to.value = filters.get('to') ?? '';
  boundDates(from, to, () => day(0));
  const zone = h('span', { class: 'muted', 'data-testid': 'time-zone', title: 'Days, buckets and times of the dashboard (Settings)' }, `Times in ${timeZone}`);
  const presets = h('div', { class: 'presets' });
  for (const [label, days] of PRESETS) {
    const button = h('button', { type: 'button', class: 'secondary' }, label);
    button.addEventListener('click', () => {
      from.value = day(days);
      to.value = '';
      from.dispatchEvent(new Event('input'));
      apply();
    });
    presets.append(button);
  }
  const live = h('input', { type: 'checkbox', name: 'live', role: 'switch' });
  live.checked = new URLSearchParams(location.search).get('live') === '1';
  const bar = h('form', { class: 'filters', role: 'search' }, campaign, broadcast, countryFilter.element, sponsor, from, to, zone, presets, h('label', { class: 'live-switch' }, live, h('span', {}, 'Live'), h('span', { class: 'live-dot', 'aria-hidden': 'true' })));
  const panels = h('div', { class: 'panels' }, h('p', { class: 'muted' }, 'Loading…'));
  root.replaceChildren(bar, panels);

  let source: EventSource | null = null;
  const liveDraw = coalesce<Overview>((o) => draw(o), LIVE_RENDER_INTERVAL_MS);
  const liveViewers = coalesce<number>((live) => {
    const node = panels.querySelector('[data-testid="live-viewers"]');
    if (node) node.textContent = format.int(live);
  }, LIVE_RENDER_INTERVAL_MS);
  const query = () => {
    const params = new URLSearchParams();
    for (const [name, control] of [['campaignId', campaign], ['broadcastId', broadcast], ['sponsorId', sponsor], ['from', from], ['to', to]] as const) {
      if (control.value) params.set(name, control.value);
    }
    if (chosenCountry) params.set('country', chosenCountry);
    return params;
  };
  /** The URL holds the whole view (filters and live mode), so that a link or a reload restores it. */
  const remember = () => {
    const params = query();
    if (live.checked) params.set('live', '1');
    history.replaceState(null, '', `${location.pathname}?${params}`);
  };
  const apply = () => {
    // A country that is not in the list is refused where it was typed, and nothing changes.
    const code = countryFilter.code(chosenCountry);
    if (code === null) return;
    chosenCountry = code;
    remember();
    // The live stream of the filters before must not draw over the answer for the new ones.
    source?.close();
    source = null;
    void load(query());
  };
  for (const control of [campaign, broadcast, sponsor, from, to]) control.addEventListener('change', apply);
  country.addEventListener('change', apply);
  bar.addEventListener('submit', (event) => {
    event.preventDefault();
    apply();
  });
  live.addEventListener('change', () => {
    remember();
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

  /** Asks for the numbers of `params` (or takes the request already under way) and draws them if still the latest. */
  async function load(params: URLSearchParams, pending?: { signal: AbortSignal; answer: Promise<Overview> }): Promise<void> {
    const signal = pending?.signal ?? requests.start();
    panels.setAttribute('aria-busy', 'true');
    try {
      const answer = await (pending?.answer ?? api<Overview>(`/v1/analytics/overview?${params}`, { signal }));
      if (!requests.isLatest(signal)) return;
      draw(answer);
      connectLive();
    } catch (error) {
      // A request replaced by a later one ends here: the later one draws.
      if (!requests.isLatest(signal)) return;
      const message = error instanceof ApiError ? error.message : 'The overview could not be loaded.';
      const retry = h('button', { type: 'button' }, 'Try again');
      retry.addEventListener('click', () => void load(params));
      panels.replaceChildren(h('div', { class: 'error', role: 'alert' }, message, ' ', retry));
    } finally {
      if (requests.isLatest(signal)) panels.removeAttribute('aria-busy');
    }
  }

  /** A link that narrows the overview to one broadcast or sponsor (drill-down), in the URL like any filter. */
  function drill(label: string, narrow: { broadcastId?: string; sponsorId?: string }): HTMLElement {
    const params = query();
    if (narrow.broadcastId) params.set('broadcastId', narrow.broadcastId);
    if (narrow.sponsorId) params.set('sponsorId', narrow.sponsorId);
    const link = h('a', { href: `${location.pathname}?${params}`, class: 'drill' }, label);
    link.addEventListener('click', (event) => {
      event.preventDefault();
      if (narrow.broadcastId) broadcast.value = narrow.broadcastId;
      if (narrow.sponsorId) sponsor.value = narrow.sponsorId;
      apply();
    });
    return link;
  }

  function draw(o: Overview): void {
    countryFilter.setChoices(o.countries ?? []);
    const empty = o.viewers.sessions === 0 && o.revenue.length === 0;
    if (empty) {
      panels.replaceChildren(h('div', { class: 'empty' }, h('h2', {}, 'No events for these filters'), h('p', {}, 'Widen the date range or clear a filter. Events appear here within a second of arriving.')));
      return;
    }
    const seriesBox = h('div', { class: 'chart' });
    const before = (currency: string) => o.previous.revenue.find((r: { currency: string }) => r.currency === currency) ?? { gross: 0, orders: 0, averageOrderValue: 0, itemsPerOrder: 0 };
    timeZone = o.timeZone ?? timeZone;
    zone.textContent = `Times in ${timeZone}`;
    const viewerRows = o.viewers.series.map((p: { at: string; concurrent: number }) => [bucketLabel(p.at, o.viewers.bucketMs, timeZone), format.int(p.concurrent)]);
    const viewers = panel(
      'Viewer count',
      DEFINITIONS.viewers,
      h('div', { class: 'stats' }, stat('watching now', format.int(o.viewers.live), 'live-viewers'), stat('peak', format.int(o.viewers.peak), 'peak', comparison(o.viewers.peak, o.previous.viewers.peak)), stat('unique viewers', format.int(o.viewers.uniqueViewers), 'unique-viewers', comparison(o.viewers.uniqueViewers, o.previous.viewers.uniqueViewers, 'count', 'unique-viewers-change'))),
      seriesBox,
      dataTable('Viewers over time', [`Bucket start (${timeZone})`, 'Sessions watching (highest per minute)'], viewerRows, 'viewer-table'),
    );
    const engagement = panel('Engagement rate', DEFINITIONS.engagement, h('div', { class: 'stats' }, stat(`${format.int(o.engagement.engagedViewers)} of ${format.int(o.engagement.joinedViewers)} viewers interacted`, format.pct(o.engagement.rate), 'engagement-rate', comparison(o.engagement.rate, o.previous.engagement.rate, 'rate', 'engagement-rate-change'))));
    const polls = panel('Poll results', DEFINITIONS.polls, o.polls.length ? pollResults(o.polls, (id) => drill(broadcastName.get(id) ?? id, { broadcastId: id }), PRIMARY) : h('p', { class: 'muted' }, 'No votes yet.'));
    // A labelled table across the whole row of panels; its rows become cards on a phone (no sideways scroll).
    const sponsorColumns = ['Sponsor', 'Broadcast', 'Impressions', 'Taps', 'Tap rate', 'Conversion', 'Revenue'];
    const sponsorRows = o.sponsors.map((s: any) =>
      labelledRow(sponsorColumns, [drill(sponsorName.get(s.sponsorId) ?? s.sponsorId, { sponsorId: s.sponsorId }), drill(broadcastName.get(s.broadcastId) ?? s.broadcastId, { broadcastId: s.broadcastId }), format.int(s.impressions), format.int(s.taps), format.pct(s.tapRate), format.pct(s.conversion), s.revenue.map((r: any) => format.money(r.amount, r.currency)).join(', ') || '–']),
    );
    const sponsorsPanel = panel(
      'Sponsor performance',
      DEFINITIONS.sponsors,
      o.sponsors.length ? responsiveTable('Sponsor performance', sponsorColumns, h('tbody', {}, ...sponsorRows), 'sponsor-table') : h('p', { class: 'muted' }, 'No sponsor activity.'),
    );
    sponsorsPanel.classList.add('wide');
    const revenue = panel(
      'Revenue',
      DEFINITIONS.revenue,
      o.revenue.length
        ? h('div', { class: 'stats' }, ...o.revenue.flatMap((r: any) => [stat(`gross (${r.currency})`, format.money(r.gross, r.currency), `gross-${r.currency}`, comparison(r.gross, before(r.currency).gross, 'count', `gross-${r.currency}-change`)), stat('orders', format.int(r.orders), `orders-${r.currency}`, comparison(r.orders, before(r.currency).orders)), stat('average order', format.money(r.averageOrderValue, r.currency), `aov-${r.currency}`, comparison(r.averageOrderValue, before(r.currency).averageOrderValue, 'count', `aov-${r.currency}-change`)), stat('items per order', format.decimal(r.itemsPerOrder), `ipo-${r.currency}`, comparison(r.itemsPerOrder, before(r.currency).itemsPerOrder, 'count', `ipo-${r.currency}-change`))]))
        : h('p', { class: 'muted' }, 'No orders.'),
    );
    const contests = panel('Contests', DEFINITIONS_EXTRA.contests, contestTable(o.contests ?? []));
    const revenueCharts = (o.revenueOverTime ?? []).map((c: { currency: string; points: Array<{ at: string; gross: number; orders: number }> }) => ({ currency: c.currency, points: c.points, box: h('div', { class: 'chart small' }) }));
    const revenueOverTime = panel(
      'Revenue over time',
      DEFINITIONS_EXTRA.revenueOverTime,
      ...(revenueCharts.length
        ? revenueCharts.flatMap((c: { currency: string; points: Array<{ at: string; gross: number; orders: number }>; box: HTMLElement }) => [
            h('h3', {}, `Gross (${c.currency})`),
            c.box,
            dataTable(`Revenue in ${c.currency}`, [`Bucket start (${timeZone})`, 'Gross', 'Orders'], c.points.map((p) => [bucketLabel(p.at, o.viewers.bucketMs, timeZone), format.money(p.gross, c.currency), format.int(p.orders)]), `revenue-table-${c.currency}`),
          ])
        : [h('p', { class: 'muted' }, 'No orders.')]),
    );
    const funnelBox = h('div', { class: 'chart small' });
    const funnelTable = dataTable('Funnel', ['Step', 'Sessions', 'Of the step before'], o.funnel.map((s: any) => [s.step, format.int(s.sessions), format.pct(s.conversion)]), 'funnel-table');
    const funnel = panel('Funnel', DEFINITIONS.funnel, funnelBox, funnelTable, h('ol', { class: 'steps' }, ...o.funnel.map((s: any) => h('li', {}, `${s.step}: ${format.count(s.sessions, 'session', 'sessions')} (${format.pct(s.conversion)})`))));
    const note = o.filters.sponsorId ? h('p', { class: 'muted' }, 'The sponsor filter narrows sponsor performance, revenue and funnel; the other panels ignore it.') : null;
    lineChart(seriesBox, o.viewers.series, PRIMARY, { name: 'Viewers', timeZone });
    for (const c of revenueCharts) lineChart(c.box, c.points.map((p: { at: string; gross: number }) => ({ at: p.at, concurrent: p.gross })), PRIMARY, { name: `Gross (${c.currency})`, timeZone });
    barChart(funnelBox, o.funnel.map((s: any) => s.step), o.funnel.map((s: any) => s.sessions), PRIMARY);
    replacePanels(panels, [note, viewers, engagement, revenue, revenueOverTime, funnel, sponsorsPanel, polls, contests].filter((x): x is HTMLElement => x !== null));
  }

  await load(filters, { signal: firstSignal, answer: firstAnswer });
  return () => {
    requests.cancel();
    source?.close();
    liveDraw.cancel();
    liveViewers.cancel();
  };
}
