import { ApiError } from '../api';

/** An API validation message in words for people ("must NOT have fewer than 1 characters" → "cannot be empty"). */
export function humanise(message: string): string {
  const fewer = /must NOT have fewer than (\d+) (characters|items)/.exec(message);
  if (fewer) return fewer[1] === '1' ? 'cannot be empty' : `needs at least ${fewer[1]} ${fewer[2] === 'items' ? 'entries' : 'characters'}`;
  const more = /must NOT have more than (\d+) (characters|items)/.exec(message);
  if (more) return `can have at most ${more[1]} ${more[2] === 'items' ? 'entries' : 'characters'}`;
  if (/must match format "date-time"/.test(message)) return 'must be a date and time';
  if (/must match pattern "\^https\?/.test(message)) return 'must be a web address starting with http:// or https://';
  if (/must NOT have duplicate items/.test(message)) return 'has the same entry twice';
  if (message.includes('must match pattern "^[A-Z]{2}$"')) return 'must be two-letter country codes such as DE';
  if (message === 'must be integer') return 'must be a whole number';
  if (/must be >= (\S+)/.test(message)) return message.replace('must be >=', 'must be at least');
  if (/must be <= (\S+)/.test(message)) return message.replace('must be <=', 'must be at most');
  return message;
}

/**
 * Shows a 400 problem's field errors beside their fields. `fields` maps the first segment of
 * each error's JSON pointer (`/options/1` → `options`) to its control and message element;
 * errors for no known field go to `general`. Returns whether the error was shown.
 */
export function showFieldErrors(error: unknown, fields: Record<string, { control: HTMLElement; message: HTMLElement }>, general: HTMLElement): boolean {
  clearFieldErrors(fields, general);
  if (!(error instanceof ApiError)) {
    general.textContent = 'That did not work. Try again.';
    return false;
  }
  const unplaced: string[] = [];
  for (const problem of error.errors) {
    const key = problem.path.split('/')[1] ?? '';
    const field = fields[key];
    if (!field) {
      unplaced.push(`${problem.path} ${humanise(problem.message)}`);
      continue;
    }
    if (!field.message.textContent) field.message.textContent = humanise(problem.message);
    field.control.setAttribute('aria-invalid', 'true');
  }
  if (!error.errors.length || unplaced.length) general.textContent = unplaced.length ? unplaced.join('; ') : error.message;
  const first = Object.values(fields).find((f) => f.control.getAttribute('aria-invalid') === 'true');
  first?.control.focus();
  return true;
}

export function clearFieldErrors(fields: Record<string, { control: HTMLElement; message: HTMLElement }>, general: HTMLElement): void {
  general.textContent = '';
  for (const { control, message } of Object.values(fields)) {
    message.textContent = '';
    control.removeAttribute('aria-invalid');
  }
}
