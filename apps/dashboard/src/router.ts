/**
 * Client-side navigation with the History API: a click on a link to one of the app's own
 * pages changes the URL and calls `show` instead of loading a new document, and Back/Forward
 * call it again. Links that download, open elsewhere or leave the app load as usual.
 */
export function startRouter(isAppPath: (path: string) => boolean, show: () => void): (href: string) => void {
  const navigate = (href: string) => {
    history.pushState(null, '', href);
    show();
  };
  document.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = (event.target as Element | null)?.closest?.('a[href]');
    if (!(link instanceof HTMLAnchorElement) || link.hasAttribute('download') || (link.target && link.target !== '_self')) return;
    const url = new URL(link.href);
    if (url.origin !== location.origin || !isAppPath(url.pathname)) return;
    event.preventDefault();
    if (url.href !== location.href) navigate(url.pathname + url.search + url.hash);
  });
  window.addEventListener('popstate', show);
  return navigate;
}
