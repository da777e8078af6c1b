/**
 * Puts `next` into `container`, keeping each panel already on screen whose new version is
 * identical (same `aria-label`, equal DOM), so an update redraws only the panels that changed
 * and the others keep their charts, scroll position and focus. Returns the panels replaced.
 */
export function replacePanels(container: HTMLElement, next: HTMLElement[]): number {
  const current = Array.from(container.children) as HTMLElement[];
  const onScreen = new Map(current.filter((el) => el.hasAttribute('aria-label')).map((el) => [el.getAttribute('aria-label')!, el]));
  const wanted = next.map((panel) => {
    const same = onScreen.get(panel.getAttribute('aria-label') ?? '');
    return same && same.isEqualNode(panel) ? same : panel;
  });
  const replaced = wanted.filter((panel, i) => panel !== current[i]).length;
  if (wanted.length === current.length) {
    wanted.forEach((panel, i) => {
      if (panel !== current[i]) container.replaceChild(panel, current[i]!);
    });
  } else {
    container.replaceChildren(...wanted);
  }
  return replaced;
}
