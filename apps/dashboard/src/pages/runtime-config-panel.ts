import { api } from '../api';
import { h } from '../dom';
import { clearFieldErrors, showFieldErrors } from './field-errors';

/** What each feature flag turns on, in words an editor uses. Unknown flags get their key split into words. */
const FLAG_LABELS: Record<string, string> = {
  polls: 'Polls',
  contests: 'Contests',
  lineup: 'Line-ups',
  sponsorMoments: 'Sponsor moments',
  payments: 'Shop and payments',
};
const LANGUAGES = ['en', 'de', 'fr', 'es', 'it'];

export const flagLabel = (key: string) => FLAG_LABELS[key] ?? key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase());

/** The message element of a settings field, tied to its control by aria-describedby. */
function messageFor(control: HTMLElement, name: string): HTMLElement {
  control.setAttribute('aria-describedby', `settings-${name}-error`);
  return h('span', { class: 'field-error', id: `settings-${name}-error` });
}

/**
 * Runtime config and retention, every field labelled; the commerce key masked until revealed.
 * A value the API refuses is explained beside its field.
 */
export function runtimeConfigPanel(settings: any, note: HTMLElement): HTMLElement {
  const field = (label: string, control: HTMLElement, message: HTMLElement, hint?: string) => h('label', {}, label, control, hint ? h('span', { class: 'muted' }, hint) : null, message);
  const color = h('input', { type: 'color', name: 'primaryColor' });
  color.value = settings.theme.primaryColor.toLowerCase();
  const flags = Object.keys(settings.featureFlags).map((flag) => {
    const box = h('input', { type: 'checkbox', name: flag });
    box.checked = settings.featureFlags[flag];
    return h('label', { class: 'toggle' }, box, flagLabel(flag));
  });
  const markets = h('input', { name: 'availableMarkets', placeholder: 'DE, AT, CH' });
  markets.value = settings.availableMarkets.join(', ');
  const languageNames = new Intl.DisplayNames(['en'], { type: 'language' });
  const language = h('select', { name: 'defaultLanguage' }, ...LANGUAGES.map((l) => h('option', { value: l }, languageNames.of(l) ?? l)));
  language.value = settings.localization.defaultLanguage;
  const commerce = h('input', { type: 'password', name: 'commerceApiKey', autocomplete: 'off', spellcheck: 'false', class: 'masked' });
  commerce.value = settings.commerceApiKey;
  const reveal = h('button', { type: 'button', class: 'secondary', 'aria-pressed': 'false', 'aria-label': 'Show the commerce key' }, 'Show');
  reveal.addEventListener('click', () => {
    const shown = commerce.type === 'password';
    commerce.type = shown ? 'text' : 'password';
    reveal.textContent = shown ? 'Hide' : 'Show';
    reveal.setAttribute('aria-pressed', String(shown));
  });
  const retention = h('input', { type: 'number', name: 'retentionMonths', min: '1', max: '120' });
  retention.value = String(settings.retentionMonths);
  const zones = h('datalist', { id: 'settings-time-zones' }, ...Intl.supportedValuesOf('timeZone').map((zone) => h('option', { value: zone })));
  const timeZone = h('input', { name: 'timeZone', list: 'settings-time-zones', autocomplete: 'off', spellcheck: 'false' });
  timeZone.value = settings.timeZone ?? 'UTC';
  // Keyed by the first segment of the API's JSON pointers (`/theme/primaryColor` → theme).
  const fields = {
    theme: { control: color, message: messageFor(color, 'theme') },
    availableMarkets: { control: markets, message: messageFor(markets, 'markets') },
    localization: { control: language, message: messageFor(language, 'language') },
    commerceApiKey: { control: commerce, message: messageFor(commerce, 'commerce') },
    retentionMonths: { control: retention, message: messageFor(retention, 'retention') },
    timeZone: { control: timeZone, message: messageFor(timeZone, 'time-zone') },
  };
  const general = h('p', { class: 'field-error', role: 'alert' });
  // The API checks every value and says which one is wrong; the browser's own bubbles would name no field in words.
  const config = h('form', { class: 'form-grid', 'aria-label': 'Runtime config and retention', novalidate: '' },
    field('Theme colour', color, fields.theme.message),
    h('fieldset', { class: 'wide' }, h('legend', {}, 'Features shown to viewers'), h('div', { class: 'actions' }, ...flags)),
    field('Markets', markets, fields.availableMarkets.message, 'Country codes, comma-separated'),
    field('Default language', language, fields.localization.message),
    h('label', {}, 'Commerce API key', h('span', { class: 'actions' }, commerce, reveal), fields.commerceApiKey.message),
    field('Keep events for (months)', retention, fields.retentionMonths.message),
    field('Time zone', timeZone, fields.timeZone.message, 'Days, buckets and times of the dashboard'),
    zones,
    h('div', { class: 'wide' }, h('button', { type: 'submit' }, 'Save')),
    h('div', { class: 'wide' }, general),
  );
  for (const [control, name] of [[color, 'Theme colour'], [markets, 'Markets'], [language, 'Default language'], [commerce, 'Commerce API key'], [retention, 'Keep events for (months)'], [timeZone, 'Time zone']] as const) {
    control.setAttribute('aria-label', name);
  }
  config.addEventListener('submit', async (event) => {
    event.preventDefault();
    const featureFlags = Object.fromEntries(flags.map((label) => {
      const box = label.querySelector('input')!;
      return [box.name, box.checked];
    }));
    clearFieldErrors(fields, general);
    note.textContent = '';
    try {
      await api('/v1/settings', {
        method: 'PATCH',
        body: JSON.stringify({
          theme: { primaryColor: color.value.toUpperCase() },
          featureFlags,
          availableMarkets: markets.value.split(',').map((m) => m.trim().toUpperCase()).filter(Boolean),
          localization: { defaultLanguage: language.value },
          commerceApiKey: commerce.value,
          retentionMonths: retention.value.trim() === '' ? null : Number(retention.value),
          timeZone: timeZone.value.trim(),
        }),
      });
      note.textContent = 'Saved. Apps pick the change up at their next start.';
    } catch (error) {
      showFieldErrors(error, fields, general);
    }
  });
  return h('section', { class: 'panel', 'aria-labelledby': 'config-title' },
    h('h2', { id: 'config-title' }, 'Runtime config and retention'),
    h('p', { class: 'muted' }, `Processing region: ${settings.processingRegion}`),
    config);
}
