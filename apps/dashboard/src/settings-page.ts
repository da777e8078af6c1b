import { api, ApiError } from './api';
import { h } from './dom';
import { dataTable, labelledRow } from './pages/data-table';
import { usePageStyles } from './pages/page-styles';
import { runtimeConfigPanel } from './pages/runtime-config-panel';
import { webhooksPanel } from './pages/webhooks-panel';

const KEY_COLUMNS = ['Public key', 'Name', 'State'];

/** Settings: webhooks (event types, secret, test, delivery log, deletion), API keys, runtime config and retention. */
export async function renderSettings(root: HTMLElement): Promise<void> {
  usePageStyles();
  const note = h('p', { role: 'status', class: 'muted' });
  const [settings, keys, webhooks] = await Promise.all([
    api<any>('/v1/settings'),
    api<{ data: any[] }>('/v1/api-keys'),
    webhooksPanel(note),
  ]);
  const refresh = () => void renderSettings(root);
  const fail = (error: unknown) => (note.textContent = error instanceof ApiError ? error.message : 'That did not work.');

  const addKey = h('button', { type: 'button' }, 'New API key');
  addKey.addEventListener('click', () => void api('/v1/api-keys', { method: 'POST', body: JSON.stringify({ name: 'dashboard' }) }).then(refresh, fail));
  const keyRows = keys.data.map((k) => {
    const revoke = h('button', { type: 'button', class: 'secondary', 'aria-label': `Revoke ${k.key}` }, 'Revoke');
    revoke.addEventListener('click', () => {
      if (confirm(`Revoke ${k.key}? Apps using it stop working.`)) void api(`/v1/api-keys/${k.id}`, { method: 'DELETE' }).then(refresh, fail);
    });
    return labelledRow(KEY_COLUMNS, [h('code', { class: 'url-cell' }, k.key), k.name, k.revokedAt ? `Revoked ${k.revokedAt.slice(0, 10)}` : revoke]);
  });

  root.replaceChildren(
    note,
    webhooks,
    h('section', { class: 'panel', 'aria-labelledby': 'keys-title' }, h('h2', { id: 'keys-title' }, 'API keys'),
      h('p', { class: 'muted' }, 'Public keys go into apps; they can only send events.'), addKey, dataTable('API keys', KEY_COLUMNS, h('tbody', {}, ...keyRows))),
    runtimeConfigPanel(settings, note),
  );
}
