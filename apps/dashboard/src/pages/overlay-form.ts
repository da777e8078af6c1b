import { api } from '../api';
import { h } from '../dom';
import { clearFieldErrors, showFieldErrors } from './field-errors';

type Field = { control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement; message: HTMLElement; label: HTMLElement };
const TYPES: Array<[string, string]> = [['poll', 'Poll'], ['contest', 'Contest'], ['lineup', 'Line-up'], ['sponsor_moment', 'Sponsor moment'], ['product', 'Product']];
let ids = 0;

/** A labelled control with its own message element, tied by aria-describedby. */
function field(label: string, control: Field['control'], hint?: string): Field {
  const id = `overlay-field-${++ids}`;
  const message = h('span', { class: 'field-error', id: `${id}-error` });
  control.id = id;
  control.setAttribute('aria-describedby', `${id}-error`);
  // Named by the label's own words: a label around a select would add the chosen option to the name.
  control.setAttribute('aria-label', label);
  const wrapper = h('label', { for: id }, label, control, hint ? h('span', { class: 'muted' }, hint) : null, message);
  return { control, message, label: wrapper };
}
const lines = (text: string) => text.split('\n').map((line) => line.trim()).filter(Boolean);
const isoOrUndefined = (local: string) => (local ? new Date(local).toISOString() : undefined);

/**
 * Creation of every overlay type: the fields follow the chosen type, and the API's validation
 * problems appear beside the fields they concern.
 */
export function overlayForm(broadcastId: string, sponsors: Array<{ id: string; name: string }>, onCreated: () => void): HTMLFormElement {
  const type = h('select', { name: 'type' }, ...TYPES.map(([value, label]) => h('option', { value }, label)));
  const sponsorSelect = (required: boolean) =>
    h('select', { name: 'sponsorId' }, h('option', { value: '' }, required ? 'Choose a sponsor' : 'No sponsor'), ...sponsors.map((s) => h('option', { value: s.id }, s.name)));
  const f = {
    question: field('Poll question', h('input', { name: 'question' })),
    options: field('Poll options', h('textarea', { name: 'options', rows: '3' }), 'One per line, 2 to 6'),
    closesAt: field('Closes at (optional)', h('input', { name: 'closesAt', type: 'datetime-local' })),
    title: field('Contest title', h('input', { name: 'title' })),
    description: field('Description (optional)', h('textarea', { name: 'description', rows: '2' })),
    items: field('Line-up items', h('textarea', { name: 'items', rows: '4' }), 'One per line'),
    momentSponsor: field('Sponsor', sponsorSelect(true)),
    message: field('Message', h('input', { name: 'message' })),
    ctaUrl: field('Link (optional)', h('input', { name: 'ctaUrl', type: 'url', placeholder: 'https://' })),
    durationSeconds: field('Shown for (seconds, optional)', h('input', { name: 'durationSeconds', type: 'number', min: '1', max: '600' })),
    name: field('Product name', h('input', { name: 'name' })),
    price: field('Price', h('input', { name: 'price', type: 'number', min: '0', step: '0.01' })),
    currency: field('Currency', h('input', { name: 'currency', value: 'EUR', maxlength: '3', autocomplete: 'off' })),
    placement: field('Placement', h('select', { name: 'placement' }, h('option', { value: 'carousel' }, 'Carousel'), h('option', { value: 'banner' }, 'Banner'))),
    productSponsor: field('Sponsor (optional)', sponsorSelect(false)),
    url: field('Product link (optional)', h('input', { name: 'url', type: 'url', placeholder: 'https://' })),
  };
  const byType: Record<string, Array<keyof typeof f>> = {
    poll: ['question', 'options', 'closesAt'],
    contest: ['title', 'description', 'closesAt'],
    lineup: ['items'],
    sponsor_moment: ['momentSponsor', 'message', 'ctaUrl', 'durationSeconds'],
    product: ['name', 'price', 'currency', 'placement', 'productSponsor', 'url'],
  };
  const general = h('p', { class: 'field-error', role: 'alert' });
  const status = h('p', { class: 'muted', role: 'status' });
  const fieldsBox = h('div', { class: 'form-grid' });
  const typeLabel = h('label', {}, 'Overlay type', type);
  type.setAttribute('aria-label', 'Overlay type');
  const show = () => {
    fieldsBox.replaceChildren(typeLabel, ...byType[type.value]!.map((key) => f[key].label));
    clearFieldErrors(errorTargets(), general);
  };
  // Each API field maps to the control that produced it (the pointer's first segment).
  const errorTargets = (): Record<string, Field> => {
    const visible = byType[type.value]!;
    const pick = (key: keyof typeof f) => (visible.includes(key) ? { [key]: f[key] } : {});
    return {
      ...pick('question'), ...pick('options'), ...pick('closesAt'), ...pick('title'), ...pick('description'), ...pick('items'),
      ...pick('message'), ...pick('ctaUrl'), ...pick('name'), ...pick('price'), ...pick('currency'), ...pick('placement'), ...pick('url'),
      ...(type.value === 'sponsor_moment' ? { sponsorId: f.momentSponsor, durationMs: f.durationSeconds } : {}),
      ...(type.value === 'product' ? { sponsorId: f.productSponsor } : {}),
    };
  };
  const body = (): Record<string, unknown> => {
    const v = (key: keyof typeof f) => f[key].control.value.trim();
    const optional = (name: string, value: unknown) => (value === '' || value === undefined ? {} : { [name]: value });
    switch (type.value) {
      case 'poll':
        return { type: 'poll', question: v('question'), options: lines(f.options.control.value), ...optional('closesAt', isoOrUndefined(v('closesAt'))) };
      case 'contest':
        return { type: 'contest', title: v('title'), ...optional('description', v('description')), ...optional('closesAt', isoOrUndefined(v('closesAt'))) };
      case 'lineup':
        return { type: 'lineup', items: lines(f.items.control.value).map((title) => ({ title })) };
      case 'sponsor_moment':
        return {
          type: 'sponsor_moment', sponsorId: v('momentSponsor'), message: v('message'), ...optional('ctaUrl', v('ctaUrl')),
          ...optional('durationMs', v('durationSeconds') === '' ? '' : Math.round(Number(v('durationSeconds')) * 1000)),
        };
      default:
        return {
          type: 'product', name: v('name'), price: v('price') === '' ? undefined : Number(v('price')), currency: v('currency').toUpperCase(),
          placement: v('placement'), ...optional('sponsorId', v('productSponsor')), ...optional('url', v('url')),
        };
    }
  };
  const form = h('form', { 'aria-label': 'New overlay', novalidate: '' }, h('h3', {}, 'New overlay'), fieldsBox, general,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Create overlay')), status);
  type.addEventListener('change', show);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    status.textContent = '';
    try {
      await api(`/v1/broadcasts/${encodeURIComponent(broadcastId)}/overlays`, { method: 'POST', body: JSON.stringify(body()) });
      clearFieldErrors(errorTargets(), general);
      for (const key of byType[type.value]!) if (f[key].control.tagName !== 'SELECT' && key !== 'currency') f[key].control.value = '';
      status.textContent = `${TYPES.find(([value]) => value === type.value)![1]} created. Show it from the list above.`;
      onCreated();
    } catch (error) {
      showFieldErrors(error, errorTargets(), general);
    }
  });
  show();
  return form;
}
