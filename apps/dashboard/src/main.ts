import { api, ApiError } from './api';
import { h } from './dom';
import { renderNotFound } from './not-found-page';
import { ROUTES, type Route } from './routes';
import { startRouter } from './router';
import { DASHBOARD_CSS } from './styles';
import { applyStoredTheme, themeToggle } from './theme';

const root = document.getElementById('app')!;
/** Whether the shell is up (logged in as far as the app knows). */
let started = false;
/** Stops what the page on screen started (its live stream); replaced on every navigation. */
let leave: () => void = () => {};
/** Counts navigations, so a page that finishes loading after the user moved on is dropped. */
let visit = 0;

function header(): HTMLElement {
  const logout = h('button', { type: 'button', class: 'secondary' }, 'Log out');
  logout.addEventListener('click', async () => {
    await api('/v1/session', { method: 'DELETE' });
    location.href = '/';
  });
  const nav = h('nav', { 'aria-label': 'Pages' }, ...Object.entries(ROUTES).map(([path, route]) => h('a', { href: path }, route.label)));
  return h('header', {}, h('a', { class: 'brand', href: '/' }, 'Svc'), nav, h('span', { class: 'spacer' }), h('span', { class: 'muted tenant' }), themeToggle(), logout);
}

function markCurrent(path: string): void {
  root.querySelectorAll<HTMLAnchorElement>('nav a').forEach((link) => {
    if (link.pathname === path) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  });
}

/** Shows the page of the current URL inside the shell (built once per login). */
async function show(): Promise<void> {
  const current = ++visit;
  leave();
  leave = () => {};
  if (!root.querySelector(':scope > header')) root.replaceChildren(header(), h('main', { tabindex: '-1' }));
  const main = root.querySelector('main')!;
  const route: Route = ROUTES[location.pathname] ?? { label: 'Page not found', render: renderNotFound };
  document.title = `${route.label} · Svc dashboard`;
  markCurrent(location.pathname);
  const content = h('div', {});
  main.setAttribute('aria-busy', 'true');
  main.replaceChildren(h('div', { class: 'loading', role: 'status' }, 'Loading…'));
  try {
    const stop = await route.render(content);
    const cleanup = typeof stop === 'function' ? (stop as () => void) : () => {};
    if (current !== visit) return cleanup();
    leave = cleanup;
    main.replaceChildren(content);
  } catch (error) {
    if (current !== visit) return;
    if (error instanceof ApiError && error.status === 401) return login();
    const retry = h('button', { type: 'button' }, 'Try again');
    retry.addEventListener('click', () => void show());
    main.replaceChildren(h('div', { class: 'error', role: 'alert' }, error instanceof ApiError ? error.message : 'This page could not be loaded.', ' ', retry));
  } finally {
    if (current === visit) main.removeAttribute('aria-busy');
  }
}

function login(message?: string): void {
  leave();
  leave = () => {};
  const token = h('input', { type: 'password', name: 'token', autocomplete: 'current-password', placeholder: 'svc_sk_…', 'aria-label': 'Admin token', required: '' });
  const form = h(
    'form',
    { class: 'login' },
    h('h1', {}, 'Svc dashboard'),
    message ? h('div', { class: 'error', role: 'alert' }, message) : null,
    h('label', {}, 'Admin token', token),
    h('button', { type: 'submit' }, 'Log in'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api('/v1/session', { method: 'POST', body: JSON.stringify({ token: token.value.trim() }) });
      void start();
    } catch (error) {
      login(error instanceof ApiError ? error.message : 'The login failed.');
    }
  });
  root.replaceChildren(h('main', {}, form));
  token.focus();
}

/**
 * Starts the app: the session check and the page's own requests go out together (one round
 * trip less on a first visit); a page refused with 401 shows the login form.
 */
async function start(): Promise<void> {
  started = true;
  if (location.pathname in ROUTES) {
    root.replaceChildren();
    const session = api<{ tenant: string }>('/v1/session');
    const shown = show();
    session.then(
      ({ tenant }) => {
        const label = root.querySelector('header .tenant');
        if (label) label.textContent = `Tenant: ${tenant}`;
      },
      () => {}, // A refused session also refuses the page, which shows the login form.
    );
    await shown;
    return;
  }
  try {
    await api('/v1/session');
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      if (location.pathname in ROUTES) login();
      else {
        const main = h('main', {});
        root.replaceChildren(main);
        void renderNotFound(main);
      }
    } else root.replaceChildren(h('div', { class: 'error', role: 'alert' }, 'The dashboard could not start. Reload to try again.'));
    return;
  }
  root.replaceChildren();
  await show();
}

applyStoredTheme();
const style = document.createElement('style');
style.textContent = DASHBOARD_CSS;
document.head.append(style);
startRouter((path) => path in ROUTES, () => void (started ? show() : start()));
void start();
