import { api, ApiError } from '../api';
import { fmt, h } from '../dom';
import { dataTable, labelledRow } from './data-table';
import { rangeLabel, type FigureRange } from './figure-range';
import { overlayForm } from './overlay-form';

/** How often the overlay list is read again while open, so that a change made elsewhere shows. */
export const OVERLAY_REFRESH_MS = 5_000;

const OVERLAY_COLUMNS = ['Type', 'Content', 'Sponsor', 'State', 'Action'];
const SPONSOR_COLUMNS = ['Sponsor', 'Impressions', 'Taps', 'Tap rate', 'Revenue'];
const TYPE_NAMES: Record<string, string> = { poll: 'Poll', contest: 'Contest', lineup: 'Line-up', sponsor_moment: 'Sponsor moment', product: 'Product' };

interface Overview {
  viewers: { live: number; peak: number; uniqueViewers: number };
  engagement: { rate: number };
  polls: Array<{ totalVotes: number }>;
  sponsors: Array<{ sponsorId: string; impressions: number; taps: number; tapRate: number; revenue: Array<{ currency: string; amount: number }> }>;
  revenue: Array<{ currency: string; gross: number; orders: number }>;
}

/**
 * One broadcast: its figures over the days of `range` (kept current by the live stream), its overlays (read again every
 * few seconds) with show/hide, and the creation of new overlays. Stops updating once `host`
 * leaves the document, or when the function it returns is called (the view is replaced).
 */
export function broadcastDetail(
  host: HTMLElement,
  broadcast: { id: string; title: string | null; campaign: string },
  sponsors: Array<{ id: string; name: string }>,
  range: FigureRange,
): () => void {
  const sponsorName = new Map(sponsors.map((s) => [s.id, s.name]));
  const filter = new URLSearchParams({ broadcastId: broadcast.id, from: range.from, to: range.to });
  const figures = h('div', { class: 'figures', 'data-testid': 'broadcast-figures' });
  const sponsorBody = h('tbody');
  const overlayBody = h('tbody');
  const overlayNote = h('p', { class: 'muted', role: 'status' });
  const liveBadge = h('span', { class: 'badge', 'data-testid': 'live-state' }, 'No one watching');
  const figure = (label: string, value: string, testId: string) => h('div', {}, h('div', { class: 'value', 'data-testid': testId }, value), h('div', { class: 'label' }, label));

  const showFigures = (o: Overview) => {
    liveBadge.textContent = o.viewers.live ? `● ${fmt.int(o.viewers.live)} watching now` : 'No one watching';
    liveBadge.classList.toggle('on', o.viewers.live > 0);
    const votes = o.polls.reduce((sum, p) => sum + p.totalVotes, 0);
    figures.replaceChildren(
      figure('Watching now', fmt.int(o.viewers.live), 'figure-live'),
      figure('Peak viewers', fmt.int(o.viewers.peak), 'figure-peak'),
      figure('Unique viewers', fmt.int(o.viewers.uniqueViewers), 'figure-unique'),
      figure('Engagement', fmt.pct(o.engagement.rate), 'figure-engagement'),
      figure('Poll votes', fmt.int(votes), 'figure-votes'),
      ...(o.revenue.length ? o.revenue : [{ currency: 'EUR', gross: 0, orders: 0 }]).map((r) => figure(`Revenue (${r.orders} order${r.orders === 1 ? '' : 's'})`, fmt.money(r.gross, r.currency), `figure-revenue-${r.currency}`)),
    );
    sponsorBody.replaceChildren(...o.sponsors.map((s) => labelledRow(SPONSOR_COLUMNS, [
      sponsorName.get(s.sponsorId) ?? s.sponsorId, fmt.int(s.impressions), fmt.int(s.taps), fmt.pct(s.tapRate),
      s.revenue.map((r) => fmt.money(r.amount, r.currency)).join(', ') || '–',
    ])));
  };

  const loadOverlays = async () => {
    try {
      const overlays = await api<{ data: any[] }>(`/v1/broadcasts/${encodeURIComponent(broadcast.id)}/overlays`);
      overlayBody.replaceChildren(...overlays.data.map((o) => {
        const toggle = h('button', { type: 'button', 'data-overlay': o.id }, o.active ? 'Hide' : 'Show');
        toggle.addEventListener('click', async () => {
          try {
            await api(`/v1/broadcasts/${encodeURIComponent(broadcast.id)}/overlays/${o.id}/${o.active ? 'hide' : 'show'}`, { method: 'POST' });
          } catch (error) {
            overlayNote.textContent = error instanceof ApiError ? error.message : 'That did not work.';
          }
          await loadOverlays();
        });
        const content = o.question ?? o.title ?? o.message ?? o.name ?? (o.items ? o.items.map((i: { title: string }) => i.title).join(' · ') : o.id);
        return labelledRow(OVERLAY_COLUMNS, [TYPE_NAMES[o.type] ?? o.type, content, o.sponsor?.name ?? '–', o.active ? '● Shown' : 'Hidden', toggle]);
      }));
      overlayNote.textContent = overlays.data.length ? '' : 'No overlays yet.';
    } catch (error) {
      overlayNote.textContent = error instanceof ApiError ? error.message : 'The overlays could not be loaded.';
    }
  };

  const title = broadcast.title ?? broadcast.id;
  host.replaceChildren(h('section', { class: 'panel', 'aria-labelledby': 'broadcast-detail-title', 'data-broadcast': broadcast.id },
    h('h2', { id: 'broadcast-detail-title' }, title, ' ', liveBadge),
    h('p', { class: 'muted' }, `${broadcast.id} · ${broadcast.campaign} · `, h('span', { 'data-testid': 'figure-range' }, rangeLabel(range)), ' ',
      h('a', { href: `/?${filter}`, 'data-testid': 'overview-link' }, `Open the overview of ${title}`)),
    figures,
    h('h3', {}, 'Sponsors'),
    dataTable(`Sponsors of ${title}`, SPONSOR_COLUMNS, sponsorBody),
    h('h3', {}, 'Overlays'),
    overlayNote,
    dataTable(`Overlays of ${title}`, OVERLAY_COLUMNS, overlayBody, 'overlays'),
    overlayForm(broadcast.id, sponsors, () => void loadOverlays()),
  ));

  // The figures follow the live stream: sent at once, then after every stored event.
  const stream = new EventSource(`/v1/analytics/live?${filter}`, { withCredentials: true });
  stream.addEventListener('overview', (event) => showFigures(JSON.parse((event as MessageEvent<string>).data) as Overview));
  stream.addEventListener('viewers', (event) => {
    const { live } = JSON.parse((event as MessageEvent<string>).data) as { live: number };
    const value = figures.querySelector('[data-testid="figure-live"]');
    if (value) value.textContent = fmt.int(live);
    liveBadge.textContent = live ? `● ${fmt.int(live)} watching now` : 'No one watching';
    liveBadge.classList.toggle('on', live > 0);
  });
  void loadOverlays();
  const stop = () => {
    clearInterval(timer);
    stream.close();
  };
  const timer = setInterval(() => {
    if (!host.isConnected || !host.contains(figures)) stop();
    else void loadOverlays();
  }, OVERLAY_REFRESH_MS);
  return stop;
}
