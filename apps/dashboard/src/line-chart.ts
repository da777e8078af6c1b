import { fullTime, timeLabeller, valueTicks } from './chart-scale';
import { h } from './dom';

const SVG = 'http://www.w3.org/2000/svg';
/** The plot's own coordinates; the SVG stretches them to its box, so drawing needs no layout. */
const VIEW = 1000;
const X_TICKS = 4;

export interface LineChartOptions {
  /** The series name in the tooltip (default "Viewers"). */
  name?: string;
  /** The axis range (default: the first and last point). */
  fromMs?: number;
  toMs?: number;
  /** IANA time zone of the labels (default: the browser's). */
  timeZone?: string;
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string>): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  return node;
}

/**
 * A line with its area over time, drawn as SVG in relative units (it scales with its box and
 * can be drawn before it is on screen), without animation. Hovering shows the nearest point.
 */
export function lineChart(element: HTMLElement, points: Array<{ at: string; concurrent: number }>, color = 'var(--chart)', options: LineChartOptions = {}): void {
  const name = options.name ?? 'Viewers';
  const data = points.map((p) => [Date.parse(p.at), p.concurrent] as const).sort((a, b) => a[0] - b[0]);
  if (!data.length) {
    element.replaceChildren(h('p', { class: 'muted chart-empty' }, 'No data in this range.'));
    return;
  }
  const from = options.fromMs ?? data[0]![0];
  const to = Math.max(options.toMs ?? data[data.length - 1]![0], from + 1);
  const ticks = valueTicks(Math.max(...data.map((d) => d[1])));
  const top = ticks[ticks.length - 1]!;
  const x = (ms: number) => ((ms - from) / (to - from)) * VIEW;
  const y = (v: number) => VIEW - (v / top) * VIEW;
  const line = data.map(([ms, v], i) => `${i ? 'L' : 'M'}${x(ms).toFixed(1)},${y(v).toFixed(1)}`).join('');
  const plot = svg('svg', { viewBox: `0 0 ${VIEW} ${VIEW}`, preserveAspectRatio: 'none', 'aria-hidden': 'true', class: 'line-plot' });
  for (const tick of ticks) plot.append(svg('line', { x1: '0', x2: String(VIEW), y1: String(y(tick)), y2: String(y(tick)), class: 'grid-line' }));
  plot.append(
    svg('path', { d: `${line}L${x(data[data.length - 1]![0]).toFixed(1)},${VIEW}L${x(data[0]![0]).toFixed(1)},${VIEW}Z`, class: 'area' }),
    svg('path', { d: line, class: 'line' }),
  );
  const label = timeLabeller(to - from, options.timeZone);
  const xLabels = h('div', { class: 'x-labels', 'aria-hidden': 'true' });
  for (let i = 0; i < X_TICKS; i++) {
    const share = i / (X_TICKS - 1);
    xLabels.append(h('span', { style: `left:${(share * 100).toFixed(2)}%;transform:translateX(-${(share * 100).toFixed(0)}%)` }, label(from + share * (to - from))));
  }
  const yLabels = h('div', { class: 'y-labels', 'aria-hidden': 'true' }, ...ticks.map((tick) => h('span', { style: `top:${((y(tick) / VIEW) * 100).toFixed(2)}%` }, new Intl.NumberFormat().format(tick))));
  const cursor = h('div', { class: 'cursor', hidden: '' });
  const tip = h('div', { class: 'chart-tip', hidden: '' });
  const area = h('div', { class: 'plot-area' }, plot, cursor, tip);
  area.addEventListener('pointermove', (event) => {
    const box = area.getBoundingClientRect();
    const at = from + ((event.clientX - box.left) / box.width) * (to - from);
    const [ms, value] = data.reduce((best, d) => (Math.abs(d[0] - at) < Math.abs(best[0] - at) ? d : best));
    const left = `${((x(ms) / VIEW) * 100).toFixed(2)}%`;
    cursor.style.left = left;
    tip.style.left = left;
    tip.style.transform = `translateX(-${((x(ms) / VIEW) * 100).toFixed(0)}%)`;
    tip.textContent = `${fullTime(ms, options.timeZone)} · ${name}: ${new Intl.NumberFormat().format(value)}`;
    cursor.hidden = tip.hidden = false;
  });
  area.addEventListener('pointerleave', () => (cursor.hidden = tip.hidden = true));
  const max = Math.max(...data.map((d) => d[1]));
  const figure = h('div', { class: 'line-chart', role: 'img', 'aria-label': `${name} over time, ${label(from)} to ${label(to)}: highest ${max}, latest ${data[data.length - 1]![1]}.` }, yLabels, area, xLabels);
  figure.style.color = color;
  element.replaceChildren(figure);
}
