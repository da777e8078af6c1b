import { h } from './dom';

/**
 * Horizontal bars as plain HTML: labels wrap instead of being cut, the text is there for
 * screen readers, and the bars scale with the box without any drawing code.
 */
export function barChart(element: HTMLElement, labels: string[], values: number[], color = 'var(--chart)'): void {
  const max = Math.max(1, ...values);
  const format = new Intl.NumberFormat();
  const rows = labels.map((label, i) => {
    const value = values[i] ?? 0;
    const bar = h('span', { class: 'bar', style: `width:${((value / max) * 100).toFixed(2)}%` });
    bar.style.background = color;
    return h('li', {}, h('span', { class: 'bar-label' }, label), h('span', { class: 'bar-track', 'aria-hidden': 'true' }, bar), h('span', { class: 'bar-value' }, format.format(value)));
  });
  element.classList.add('bars');
  element.replaceChildren(h('ul', { class: 'bar-chart' }, ...rows));
}
