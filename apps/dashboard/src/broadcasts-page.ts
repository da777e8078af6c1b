import { api, ApiError } from './api';
import { h } from './dom';
import { broadcastDetail } from './pages/broadcast-detail';
import { figureRangeControls, type FigureRange } from './pages/figure-range';
import { clearFieldErrors, showFieldErrors } from './pages/field-errors';
import { usePageStyles } from './pages/page-styles';

/** How often the list's "watching now" is read again while the page is shown. */
export const WATCHING_REFRESH_MS = 5_000;

interface Broadcast {
  id: string;
  campaignId: number;
  title: string | null;
}

/** Broadcasts with their campaign, figures, link to the filtered overview, and live control of their overlays. */
export async function renderBroadcasts(root: HTMLElement): Promise<void> {
  usePageStyles();
  const [broadcasts, campaigns, sponsors, settings] = await Promise.all([
    api<{ data: Broadcast[] }>('/v1/broadcasts'),
    api<{ data: Array<{ id: number; name: string }> }>('/v1/campaigns'),
    api<{ data: Array<{ id: string; name: string }> }>('/v1/sponsors'),
    api<{ timeZone?: string }>('/v1/settings'),
  ]);
  const campaignName = new Map(campaigns.data.map((c) => [c.id, c.name]));
  const campaignOf = (b: Broadcast) => campaignName.get(b.campaignId) ?? `Campaign ${b.campaignId}`;
  const detail = h('div', {});
  const params = new URLSearchParams(location.search);
  let opened: Broadcast | null = null;
  let stopDetail = () => {};
  const show = (b: Broadcast) => {
    // The live stream of the view before must not keep running beside the new one.
    stopDetail();
    stopDetail = broadcastDetail(detail, { ...b, campaign: campaignOf(b) }, sponsors.data, figures.range());
  };
  const open = (b: Broadcast) => {
    const q = new URLSearchParams(location.search);
    q.set('broadcast', b.id);
    history.replaceState(history.state, '', `${location.pathname}?${q}`);
    opened = b;
    show(b);
    detail.querySelector('h2')?.setAttribute('tabindex', '-1');
    (detail.querySelector('h2') as HTMLElement | null)?.focus();
  };
  // The figures (and the overview links) follow the days chosen here.
  const overviewHref = (b: Broadcast, range: FigureRange) => `/?${new URLSearchParams({ broadcastId: b.id, from: range.from, to: range.to })}`;
  const figures = figureRangeControls(settings.timeZone ?? 'UTC', (range) => {
    for (const link of Array.from(list.querySelectorAll<HTMLAnchorElement>('a[data-overview]'))) {
      link.href = overviewHref(broadcasts.data.find((b) => b.id === link.dataset.overview)!, range);
    }
    if (opened) show(opened);
  });

  const list = h('ul', { class: 'broadcast-list' }, ...broadcasts.data.map((b) => {
    const button = h('button', { type: 'button', class: 'secondary' }, b.title ?? b.id);
    button.addEventListener('click', () => open(b));
    return h('li', { 'data-broadcast': b.id }, button,
      h('span', { class: 'badge', 'data-testid': `watching-${b.id}` }, 'No one watching'),
      h('span', { class: 'meta' }, `${b.id} · ${campaignOf(b)}`),
      h('a', { href: overviewHref(b, figures.range()), 'data-overview': b.id, 'aria-label': `Overview of ${b.title ?? b.id}` }, 'Overview'));
  }));

  const id = h('input', { name: 'id', 'aria-label': 'New broadcast id', 'aria-describedby': 'new-broadcast-id-error', autocomplete: 'off' });
  const title = h('input', { name: 'title', 'aria-label': 'Title', 'aria-describedby': 'new-broadcast-title-error' });
  const campaign = h('select', { name: 'campaignId', 'aria-label': 'Campaign', 'aria-describedby': 'new-broadcast-campaign-error' }, ...campaigns.data.map((c) => h('option', { value: String(c.id) }, c.name)));
  const fields = {
    id: { control: id, message: h('span', { class: 'field-error', id: 'new-broadcast-id-error' }) },
    title: { control: title, message: h('span', { class: 'field-error', id: 'new-broadcast-title-error' }) },
    campaignId: { control: campaign, message: h('span', { class: 'field-error', id: 'new-broadcast-campaign-error' }) },
  };
  const general = h('p', { class: 'field-error', role: 'alert' });
  const create = h('form', { class: 'form-grid', 'aria-label': 'New broadcast', novalidate: '' },
    h('label', {}, 'Broadcast id (the content id of the app)', id, fields.id.message),
    h('label', {}, 'Title', title, fields.title.message),
    h('label', {}, 'Campaign', campaign, fields.campaignId.message),
    h('div', {}, h('button', { type: 'submit' }, 'Create broadcast')),
    h('div', { class: 'wide' }, general),
  );
  create.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFieldErrors(fields, general);
    try {
      await api('/v1/broadcasts', { method: 'POST', body: JSON.stringify({ id: id.value.trim(), campaignId: Number(campaign.value), ...(title.value.trim() ? { title: title.value.trim() } : {}) }) });
      await renderBroadcasts(root);
    } catch (error) {
      if (error instanceof ApiError && error.status !== 400) general.textContent = error.message;
      else showFieldErrors(error, fields, general);
    }
  });

  root.replaceChildren(
    broadcasts.data.length
      ? h('section', { class: 'panel', 'aria-labelledby': 'broadcasts-title' }, h('h2', { id: 'broadcasts-title' }, 'Broadcasts'), figures.element, list)
      : h('div', { class: 'empty' }, h('h2', {}, 'No broadcasts yet'), h('p', {}, 'Create one below, or let the SDK discover it with setContent().')),
    detail,
    h('section', { class: 'panel', 'aria-labelledby': 'new-broadcast-title' }, h('h2', { id: 'new-broadcast-title' }, 'New broadcast'), create),
  );
  const chosen = broadcasts.data.find((b) => b.id === params.get('broadcast'));
  if (chosen) open(chosen);

  // "Watching now" beside each broadcast, read again while the list is on screen.
  const showWatching = async () => {
    const watching = await api<{ data: Array<{ broadcastId: string; live: number }> }>('/v1/analytics/watching-now').catch(() => null);
    if (!watching) return;
    const live = new Map(watching.data.map((w) => [w.broadcastId, w.live]));
    for (const badge of Array.from(list.querySelectorAll<HTMLElement>('[data-testid^="watching-"]'))) {
      const count = live.get(badge.closest('li')!.dataset.broadcast!) ?? 0;
      badge.textContent = count ? `● ${count} watching now` : 'No one watching';
      badge.classList.toggle('on', count > 0);
    }
  };
  void showWatching();
  const timer = setInterval(() => {
    if (!list.isConnected) clearInterval(timer);
    else void showWatching();
  }, WATCHING_REFRESH_MS);
}
