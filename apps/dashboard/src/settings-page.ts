import { api, ApiError } from './api';
import { h } from './dom';

/** Settings: webhooks (with test, delivery log and replay), API keys, runtime config and retention. */
export async function renderSettings(root: HTMLElement): Promise<void> {
  const [settings, keys, hooks] = await Promise.all([
    api<any>('/v1/settings'),
    api<{ data: any[] }>('/v1/api-keys'),
    api<{ data: any[] }>('/v1/webhooks'),
  ]);
  const refresh = () => void renderSettings(root);
  const note = h('p', { role: 'status', class: 'muted' });
  const fail = (error: unknown) => (note.textContent = error instanceof ApiError ? error.message : 'That did not work.');

  // Webhooks
  const url = h('input', { name: 'url', type: 'url', placeholder: 'https://example.com/hooks/svc', 'aria-label': 'Webhook URL', required: '' });
  const addHook = h('form', { class: 'filters' }, url, h('button', { type: 'submit' }, 'Add endpoint'));
  addHook.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const created = await api<any>('/v1/webhooks', { method: 'POST', body: JSON.stringify({ url: url.value }) });
      alert(`Signing secret (shown once here; reveal it later from the API):\n${created.secret}`);
      refresh();
    } catch (error) {
      fail(error);
    }
  });
  const log = h('div', { 'data-testid': 'delivery-log' });
  const showLog = async (id: string) => {
    const page = await api<{ data: any[] }>(`/v1/webhooks/${id}/deliveries?limit=50`);
    log.replaceChildren(
      h('h3', {}, `Deliveries of ${id}`),
      page.data.length
        ? h('table', {}, h('tbody', {}, ...page.data.map((d) => {
            const replay = h('button', { type: 'button', class: 'secondary' }, 'Replay');
            replay.addEventListener('click', () => void api(`/v1/webhooks/${id}/deliveries/${d.id}/replay`, { method: 'POST' }).then(() => showLog(id), fail));
            return h('tr', {}, h('td', {}, d.createdAt.replace('T', ' ').slice(0, 19)), h('td', {}, d.event), h('td', { 'data-testid': 'delivery-status' }, d.status), h('td', {}, String(d.lastStatusCode ?? d.lastError ?? '')), h('td', {}, `${d.attempts} attempt(s)`), h('td', {}, replay));
          })))
        : h('p', { class: 'muted' }, 'No deliveries yet.'),
    );
  };
  const hookRows = hooks.data.map((w) => {
    const test = h('button', { type: 'button' }, 'Send test');
    test.addEventListener('click', async () => {
      const result = await api<any>(`/v1/webhooks/${w.id}/test`, { method: 'POST' }).catch(fail);
      if (result) note.textContent = result.delivered ? `Test delivered (${result.statusCode}, ${result.latencyMs} ms).` : `Test failed: ${result.error ?? result.statusCode}.`;
      void showLog(w.id);
    });
    const view = h('button', { type: 'button', class: 'secondary' }, 'Delivery log');
    view.addEventListener('click', () => void showLog(w.id));
    const toggle = h('button', { type: 'button', class: 'secondary' }, w.enabled ? 'Disable' : 'Enable');
    toggle.addEventListener('click', () => void api(`/v1/webhooks/${w.id}`, { method: 'PATCH', body: JSON.stringify({ enabled: !w.enabled }) }).then(refresh, fail));
    return h('tr', {}, h('td', {}, w.url), h('td', {}, w.enabled ? 'enabled' : `disabled: ${w.disabledReason ?? ''}`), h('td', {}, test, ' ', view, ' ', toggle));
  });

  // API keys
  const addKey = h('button', { type: 'button' }, 'New API key');
  addKey.addEventListener('click', () => void api('/v1/api-keys', { method: 'POST', body: JSON.stringify({ name: 'dashboard' }) }).then(refresh, fail));
  const keyRows = keys.data.map((k) => {
    const revoke = h('button', { type: 'button', class: 'secondary' }, 'Revoke');
    revoke.addEventListener('click', () => {
      if (confirm(`Revoke ${k.key}? Apps using it stop working.`)) void api(`/v1/api-keys/${k.id}`, { method: 'DELETE' }).then(refresh, fail);
    });
    return h('tr', {}, h('td', {}, h('code', {}, k.key)), h('td', {}, k.name), h('td', {}, k.revokedAt ? `revoked ${k.revokedAt.slice(0, 10)}` : revoke));
  });

  // Runtime config and retention
  const color = h('input', { type: 'color', name: 'primaryColor', 'aria-label': 'Theme color' });
  color.value = settings.theme.primaryColor.toLowerCase();
  const flags = Object.keys(settings.featureFlags).map((flag) => {
    const box = h('input', { type: 'checkbox', name: flag });
    box.checked = settings.featureFlags[flag];
    return h('label', { class: 'toggle' }, box, ` ${flag}`);
  });
  const markets = h('input', { name: 'availableMarkets', 'aria-label': 'Markets', size: '40' });
  markets.value = settings.availableMarkets.join(',');
  const language = h('select', { name: 'defaultLanguage', 'aria-label': 'Language' }, ...['en', 'de', 'fr', 'es', 'it'].map((l) => h('option', { value: l }, l)));
  language.value = settings.localization.defaultLanguage;
  const commerce = h('input', { name: 'commerceApiKey', 'aria-label': 'Commerce key', size: '40' });
  commerce.value = settings.commerceApiKey;
  const retention = h('input', { type: 'number', name: 'retentionMonths', min: '1', max: '120', 'aria-label': 'Retention (months)' });
  retention.value = String(settings.retentionMonths);
  const config = h('form', { class: 'config' },
    h('label', {}, 'Theme color ', color), h('div', { class: 'filters' }, ...flags), h('label', {}, 'Markets ', markets),
    h('label', {}, 'Language ', language), h('label', {}, 'Commerce key ', commerce), h('label', {}, 'Retention (months) ', retention),
    h('button', { type: 'submit' }, 'Save'),
  );
  config.addEventListener('submit', async (event) => {
    event.preventDefault();
    const featureFlags = Object.fromEntries(flags.map((label) => {
      const box = label.querySelector('input')!;
      return [box.name, box.checked];
    }));
    try {
      await api('/v1/settings', {
        method: 'PATCH',
        body: JSON.stringify({
          theme: { primaryColor: color.value.toUpperCase() },
          featureFlags,
          availableMarkets: markets.value.split(',').map((m) => m.trim().toUpperCase()).filter(Boolean),
          localization: { defaultLanguage: language.value },
          commerceApiKey: commerce.value,
          retentionMonths: Number(retention.value),
        }),
      });
      note.textContent = 'Saved. Apps pick the change up at their next start.';
    } catch (error) {
      fail(error);
    }
  });

  root.replaceChildren(
    note,
    h('section', { class: 'panel' }, h('h2', {}, 'Webhooks'), addHook, hookRows.length ? h('table', {}, h('tbody', {}, ...hookRows)) : h('p', { class: 'muted' }, 'No endpoints yet.'), log),
    h('section', { class: 'panel' }, h('h2', {}, 'API keys'), addKey, h('table', {}, h('tbody', {}, ...keyRows))),
    h('section', { class: 'panel' }, h('h2', {}, `Runtime config and retention (processing region: ${settings.processingRegion})`), config),
  );
}
