import { api, ApiError } from './api';
import { h } from './dom';

/** Broadcasts, and live control of their overlays. */
export async function renderBroadcasts(root: HTMLElement): Promise<void> {
  const [broadcasts, campaigns] = await Promise.all([
    api<{ data: Array<{ id: string; campaignId: number; title: string | null }> }>('/v1/broadcasts'),
    api<{ data: Array<{ id: number; name: string }> }>('/v1/campaigns'),
  ]);
  const detail = h('div', {});
  const list = h('ul', { class: 'list' });
  for (const b of broadcasts.data) {
    const open = h('button', { type: 'button', class: 'secondary' }, b.title ?? b.id);
    open.addEventListener('click', () => void showOverlays(b.id));
    list.append(h('li', {}, open, h('span', { class: 'muted' }, ` ${b.id} · campaign ${b.campaignId}`)));
  }
  const id = h('input', { name: 'id', placeholder: 'Broadcast id (the content id of the app)', 'aria-label': 'New broadcast id', required: '' });
  const title = h('input', { name: 'title', placeholder: 'Title', 'aria-label': 'Title' });
  const campaign = h('select', { name: 'campaignId', 'aria-label': 'Campaign' }, ...campaigns.data.map((c) => h('option', { value: String(c.id) }, c.name)));
  const message = h('p', { role: 'status' });
  const create = h('form', { class: 'filters' }, id, title, campaign, h('button', { type: 'submit' }, 'Create broadcast'), message);
  create.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api('/v1/broadcasts', { method: 'POST', body: JSON.stringify({ id: id.value.trim(), campaignId: Number(campaign.value), ...(title.value ? { title: title.value } : {}) }) });
      void renderBroadcasts(root);
    } catch (error) {
      message.textContent = error instanceof ApiError ? error.message : 'Could not create the broadcast.';
    }
  });

  async function showOverlays(broadcastId: string): Promise<void> {
    const overlays = await api<{ data: any[] }>(`/v1/broadcasts/${encodeURIComponent(broadcastId)}/overlays`);
    const rows = overlays.data.map((o) => {
      const toggle = h('button', { type: 'button', 'data-overlay': o.id }, o.active ? 'Hide' : 'Show');
      toggle.addEventListener('click', async () => {
        await api(`/v1/broadcasts/${encodeURIComponent(broadcastId)}/overlays/${o.id}/${o.active ? 'hide' : 'show'}`, { method: 'POST' });
        void showOverlays(broadcastId);
      });
      const label = o.question ?? o.title ?? o.message ?? o.name ?? (o.items ? `${o.items.length} items` : o.id);
      return h('tr', {}, h('td', {}, o.type), h('td', {}, label), h('td', {}, o.active ? '● shown' : 'hidden'), h('td', {}, toggle));
    });
    const question = h('input', { name: 'question', placeholder: 'Poll question', 'aria-label': 'Poll question' });
    const options = h('input', { name: 'options', placeholder: 'Options, comma separated', 'aria-label': 'Poll options' });
    const addPoll = h('form', { class: 'filters' }, question, options, h('button', { type: 'submit' }, 'Add poll'));
    addPoll.addEventListener('submit', async (event) => {
      event.preventDefault();
      await api(`/v1/broadcasts/${encodeURIComponent(broadcastId)}/overlays`, {
        method: 'POST',
        body: JSON.stringify({ type: 'poll', question: question.value, options: options.value.split(',').map((x) => x.trim()).filter(Boolean) }),
      }).catch((error: ApiError) => alert(error.message));
      void showOverlays(broadcastId);
    });
    detail.replaceChildren(
      h('section', { class: 'panel' }, h('h2', {}, `Live control: ${broadcastId}`),
        rows.length ? h('table', {}, h('tbody', {}, ...rows)) : h('p', { class: 'muted' }, 'No overlays yet.'), addPoll),
    );
  }

  root.replaceChildren(
    create,
    broadcasts.data.length ? h('section', { class: 'panel' }, h('h2', {}, 'Broadcasts'), list) : h('div', { class: 'empty' }, h('h2', {}, 'No broadcasts yet'), h('p', {}, 'Create one above, or let the SDK discover it with setContent().')),
    detail,
  );
}
