/** Builds an element; text only through textContent, never HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Array<Node | string | null | undefined>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

export const fmt = {
  int: (n: number) => new Intl.NumberFormat('en').format(n),
  pct: (n: number) => `${(n * 100).toFixed(1)}%`,
  money: (n: number, currency: string) => {
    try {
      return new Intl.NumberFormat('en', { style: 'currency', currency }).format(n);
    } catch {
      return `${n.toFixed(2)} ${currency}`;
    }
  },
};
