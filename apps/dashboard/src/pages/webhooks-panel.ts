import { api, ApiError } from '../api';
import { h } from '../dom';
import { dataTable, labelledRow } from './data-table';
import { deliveryLog } from './delivery-log';
import { eventTypeChoice } from './event-type-choice';
import { showSecretDialog } from './secret-dialog';

interface Endpoint {
  id: string;
  url: string;
  description: string | null;
  eventTypes: string[] | null;
  enabled: boolean;
  disabledReason: string | null;
  secret?: string;
}

const COLUMNS = ['Endpoint', 'Event types', 'State', 'Actions'];
const SECRET_NOTE = 'Receivers check each delivery\'s signature with this secret (Standard Webhooks). Keep it out of source code.';

/** Settings → Webhooks: endpoints with their event types, state, secret, test, log and deletion. */
export async function webhooksPanel(note: HTMLElement): Promise<HTMLElement> {
  const panel = h('section', { class: 'panel', 'aria-labelledby': 'webhooks-title' });
  const fail = (error: unknown) => (note.textContent = error instanceof ApiError ? error.message : 'That did not work.');
  const logSlot = h('div', {});

  const render = async () => {
    const hooks = await api<{ data: Endpoint[] }>('/v1/webhooks');
    const url = h('input', { name: 'url', type: 'url', placeholder: 'https://example.com/hooks/svc', 'aria-label': 'Webhook URL', required: '' });
    const urlError = h('span', { class: 'field-error', id: 'webhook-url-error' });
    const types = eventTypeChoice('Event types');
    const add = h('form', { class: 'form-grid', 'aria-label': 'Add a webhook endpoint' },
      h('label', { class: 'wide' }, 'Endpoint URL', url, urlError), h('div', { class: 'wide' }, types.element), h('div', {}, h('button', { type: 'submit' }, 'Add endpoint')));
    add.addEventListener('submit', async (event) => {
      event.preventDefault();
      urlError.textContent = '';
      url.removeAttribute('aria-invalid');
      try {
        const chosen = types.selected();
        const created = await api<Endpoint>('/v1/webhooks', { method: 'POST', body: JSON.stringify({ url: url.value.trim(), ...(chosen.length ? { eventTypes: chosen } : {}) }) });
        await render();
        await showSecretDialog('Signing secret of the new endpoint', created.secret ?? '', SECRET_NOTE);
      } catch (error) {
        if (error instanceof ApiError && error.status === 400) {
          url.setAttribute('aria-invalid', 'true');
          url.setAttribute('aria-describedby', 'webhook-url-error');
          urlError.textContent = error.message;
        } else fail(error);
      }
    });

    const rows = hooks.data.map((w) => {
      const button = (label: string, action: () => Promise<unknown>, secondary = true) => {
        const b = h('button', { type: 'button', ...(secondary ? { class: 'secondary' } : {}), 'aria-label': `${label}: ${w.url}` }, label);
        b.addEventListener('click', () => void action().catch(fail));
        return b;
      };
      const showLog = async () => {
        const log = deliveryLog(w.id, w.url);
        logSlot.replaceChildren(log.element);
        await log.refresh();
      };
      const actions = h('div', { class: 'actions' },
        button('Send test', async () => {
          const result = await api<{ delivered: boolean; statusCode: number | null; error: string | null; latencyMs: number }>(`/v1/webhooks/${w.id}/test`, { method: 'POST' });
          note.textContent = result.delivered ? `Test delivered (${result.statusCode}, ${result.latencyMs} ms).` : `Test failed: ${result.error ?? result.statusCode}.`;
          await showLog();
        }, false),
        button('Delivery log', showLog),
        button('Reveal secret', async () => {
          const revealed = await api<Endpoint>(`/v1/webhooks/${w.id}/secret`);
          await showSecretDialog('Signing secret', revealed.secret ?? '', SECRET_NOTE);
        }),
        button(w.enabled ? 'Disable' : 'Enable', async () => {
          await api(`/v1/webhooks/${w.id}`, { method: 'PATCH', body: JSON.stringify({ enabled: !w.enabled }) });
          note.textContent = w.enabled ? `Disabled ${w.url}.` : `Enabled ${w.url}.`;
          await render();
        }),
        button('Delete', async () => {
          if (!confirm(`Delete the endpoint ${w.url}? Its pending deliveries are dropped.`)) return;
          await api(`/v1/webhooks/${w.id}`, { method: 'DELETE' });
          if (logSlot.textContent?.includes(w.url)) logSlot.replaceChildren();
          note.textContent = `Deleted ${w.url}.`;
          await render();
        }),
      );
      const state = w.enabled ? 'Enabled' : `Disabled${w.disabledReason ? ` (${w.disabledReason})` : ''}`;
      return labelledRow(COLUMNS, [h('span', { class: 'url-cell' }, w.url), w.eventTypes?.length ? w.eventTypes.join(', ') : 'All', state, actions], { 'data-endpoint': w.url });
    });
    panel.replaceChildren(
      h('h2', { id: 'webhooks-title' }, 'Webhooks'),
      add,
      rows.length ? dataTable('Webhook endpoints', COLUMNS, h('tbody', {}, ...rows), 'webhook-endpoints') : h('p', { class: 'muted' }, 'No endpoints yet.'),
      logSlot,
    );
  };
  await render();
  return panel;
}
