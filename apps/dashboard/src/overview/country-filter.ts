import { h } from '../dom';
import { format } from './format';

const names = new Intl.DisplayNames([format.locale], { type: 'region' });
const nameOf = (code: string) => {
  try {
    return names.of(code) ?? code;
  } catch {
    return code;
  }
};

/**
 * The country filter: a text box with the tenant's countries (from its data) to pick from by
 * name as one types ("Germany"); a two-letter code works too. Anything else is refused with a
 * message instead of silently filtering on something else.
 */
export class CountryFilter {
  readonly input: HTMLInputElement;
  readonly element: HTMLElement;
  private readonly list: HTMLDataListElement;
  private readonly message: HTMLElement;
  private choices: string[] = [];

  constructor(code: string) {
    this.list = h('datalist', { id: 'country-choices' });
    this.input = h('input', { name: 'country', 'aria-label': 'Country', list: 'country-choices', placeholder: 'All countries', autocomplete: 'off', size: '14' });
    this.input.value = code ? nameOf(code) : '';
    this.message = h('span', { class: 'field-error', role: 'status', 'aria-live': 'polite' });
    this.element = h('span', { class: 'country-filter' }, this.input, this.list, this.message);
  }

  /** The countries of the data (ISO codes), offered by name. */
  setChoices(codes: string[]): void {
    this.choices = codes;
    this.list.replaceChildren(...codes.map((code) => h('option', { value: nameOf(code) }, code)));
  }

  /** The chosen code: '' for all countries, null when the text names no country (the message says so). */
  code(current = ''): string | null {
    const text = this.input.value.trim();
    this.message.textContent = '';
    if (!text) return '';
    const byName = [...this.choices, ...(current ? [current] : [])].find((code) => nameOf(code).toLowerCase() === text.toLowerCase());
    if (byName) return byName;
    if (/^[A-Za-z]{2}$/.test(text)) return text.toUpperCase();
    this.message.textContent = `No country named "${text}" in this data: pick one from the list.`;
    return null;
  }
}
