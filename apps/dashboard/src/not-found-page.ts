import { h } from './dom';

/** The page for a path the app does not have (the server answers it with status 404). */
export async function renderNotFound(root: HTMLElement): Promise<void> {
  root.replaceChildren(
    h('section', { class: 'not-found' },
      h('h1', {}, 'Page not found'),
      h('p', {}, 'There is no page at ', h('code', {}, location.pathname), '. It may have moved, or the link is mistyped.'),
      h('p', {}, h('a', { href: '/', class: 'button' }, 'Go to the overview'))),
  );
}
