import { api, ApiError } from '../api';
import { h } from '../dom';

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

/** Runtime config and retention, every field labelled; the commerce key masked until revealed. */
export function runtimeConfigPanel(settings: any, note: HTMLElement): HTMLElement {
  const field = (label: string, control: HTMLElement, hint?: string) => h('label', {}, label, control, hint ? h('span', { class: 'muted' }, hint) : null);
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
  const config = h('form', { class: 'form-grid', 'aria-label': 'Runtime config and retention' },
    field('Theme colour', color),
    h('fieldset', { class: 'wide' }, h('legend', {}, 'Features shown to viewers'), h('div', { class: 'actions' }, ...flags)),
    field('Markets', markets, 'Country codes, comma-separated'),
    field('Default language', language),
    h('label', {}, 'Commerce API key', h('span', { class: 'actions' }, commerce, reveal)),
    field('Keep events for (months)', retention),
    h('div', { class: 'wide' }, h('button', { type: 'submit' }, 'Save')),
  );
  for (const [control, name] of [[color, 'Theme colour'], [markets, 'Markets'], [language, 'Default language'], [commerce, 'Commerce API key'], [retention, 'Keep events for (months)']] as const) {
    control.setAttribute('aria-label', name);
  }
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
      note.textContent = error instanceof ApiError ? error.message : 'Saving failed.';
    }
  });
  return h('section', { class: 'panel', 'aria-labelledby': 'config-title' },
    h('h2', { id: 'config-title' }, 'Runtime config and retention'),
    h('p', { class: 'muted' }, `Processing region: ${settings.processingRegion}`),
    config);
}
