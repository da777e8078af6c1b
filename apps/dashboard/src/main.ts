import { api, ApiError } from './api';
import { h } from './dom';
import { renderBroadcasts } from './broadcasts-page';
import { renderEvents } from './events-page';
import { renderOverview } from './overview-page';
import { renderRejected } from './rejected-page';
import { renderSettings } from './settings-page';

const PAGES: Record<string, [string, (root: HTMLElement) => Promise<unknown>]> = {
  '/': ['Overview', renderOverview],
  '/events': ['Events', renderEvents],
  '/broadcasts': ['Broadcasts', renderBroadcasts],
  '/rejected': ['Rejected events', renderRejected],
  '/settings': ['Settings', renderSettings],
};
import { DASHBOARD_CSS } from './styles';

const root = document.getElementById('app')!;

function shell(tenant: string, content: HTMLElement): void {
  const logout = h('button', { type: 'button', class: 'secondary' }, 'Log out');
  logout.addEventListener('click', async () => {
    await api('/v1/session', { method: 'DELETE' });
    location.href = '/';
  });
  const nav = h('nav', { 'aria-label': 'Pages' }, ...Object.entries(PAGES).map(([path, [label]]) => h('a', { href: path, ...(path === location.pathname ? { 'aria-current': 'page' } : {}) }, label)));
  root.replaceChildren(h('header', {}, h('span', { class: 'brand' }, 'Svc'), nav, h('span', { class: 'spacer' }), h('span', { class: 'muted' }, `Tenant: ${tenant}`), logout), h('main', {}, content));
}

function login(message?: string): void {
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
  root.replaceChildren(form);
  token.focus();
}

async function start(): Promise<void> {
  try {
    const session = await api<{ tenant: string }>('/v1/session');
    const content = h('div', {});
    shell(session.tenant, content);
    const [, render] = PAGES[location.pathname] ?? PAGES['/']!;
    await render(content);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) login();
    else root.replaceChildren(h('div', { class: 'error', role: 'alert' }, 'The dashboard could not start. Reload to try again.'));
  }
}

const style = document.createElement('style');
style.textContent = DASHBOARD_CSS;
document.head.append(style);
void start();
