import { h } from '../dom';
import { format } from './format';

/**
 * How a headline number moved against the period just before (same length, same filters):
 * "▲ 20.0%", "▼ 50.0%", "no change", "new" (nothing before); rates move in percentage points.
 * The whole sentence is in the text, so that screen readers read it too.
 */
export function comparison(current: number, previous: number, kind: 'count' | 'rate' = 'count', testId?: string): HTMLElement {
  const attrs: Record<string, string> = testId ? { 'data-testid': testId } : {};
  const node = (direction: string, text: string) => h('span', { class: `delta ${direction}`, ...attrs }, `${text} vs previous period`);
  if (current === previous) return node('same', 'no change');
  const direction = current > previous ? 'up' : 'down';
  const arrow = current > previous ? '▲' : '▼';
  if (kind === 'rate') return node(direction, `${arrow} ${format.oneDecimal(Math.abs(current - previous) * 100)} pts`);
  if (previous === 0) return node(direction, 'new');
  return node(direction, `${arrow} ${format.pct(Math.abs(current - previous) / previous)}`);
}
