import { h } from './dom';

type Theme = 'light' | 'dark';
/** Where the user's choice is remembered; without one the page follows the system setting. */
const STORAGE_KEY = 'svc-theme';
const systemDark = () => matchMedia('(prefers-color-scheme: dark)');

function stored(): Theme | null {
  try {
    const value = localStorage.getItem(STORAGE_KEY);
    return value === 'light' || value === 'dark' ? value : null;
  } catch {
    return null;
  }
}

function effective(): Theme {
  return stored() ?? (systemDark().matches ? 'dark' : 'light');
}

/** Applies the remembered theme (if any) before the first render, so the page does not flash. */
export function applyStoredTheme(): void {
  const theme = stored();
  if (theme) document.documentElement.dataset.theme = theme;
}

/** A "Dark mode" switch: pressed when the page is dark; a click remembers the other theme. */
export function themeToggle(): HTMLButtonElement {
  const button = h('button', { type: 'button', class: 'secondary theme-toggle' }, 'Dark mode');
  const sync = () => button.setAttribute('aria-pressed', String(effective() === 'dark'));
  button.addEventListener('click', () => {
    const next: Theme = effective() === 'dark' ? 'light' : 'dark';
    try {
      localStorage.setItem(STORAGE_KEY, next);
    } catch {
      // Storage refused (private mode): the choice lasts for this page only.
    }
    document.documentElement.dataset.theme = next;
    sync();
  });
  systemDark().addEventListener('change', sync);
  sync();
  return button;
}
