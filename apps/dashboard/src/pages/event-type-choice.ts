import { h } from '../dom';

export const EVENT_NAMES = [
  'broadcast.joined', 'broadcast.left', 'poll.viewed', 'poll.voted', 'contest.viewed', 'contest.entered', 'lineup.viewed',
  'sponsor_moment.viewed', 'sponsor_moment.tapped', 'product.viewed', 'product.tapped', 'cart.item_added', 'cart.item_removed',
  'checkout.started', 'checkout.completed', 'checkout.abandoned',
] as const;

/** A collapsible list of event-type checkboxes; none ticked means every type. */
export function eventTypeChoice(legend: string, chosen: Iterable<string> = []): { element: HTMLDetailsElement; selected: () => string[]; onChange: (listener: () => void) => void } {
  const picked = new Set(chosen);
  const boxes = EVENT_NAMES.map((name) => {
    const box = h('input', { type: 'checkbox', name: 'event', value: name });
    box.checked = picked.has(name);
    return box;
  });
  const summary = h('summary', {});
  const describe = () => {
    const count = boxes.filter((b) => b.checked).length;
    summary.textContent = count ? `${legend}: ${count} chosen` : `${legend}: all`;
  };
  const element = h('details', { class: 'event-types' }, summary,
    h('fieldset', { class: 'choices' }, h('legend', { class: 'visually-hidden' }, legend), ...boxes.map((box) => h('label', {}, box, box.value))));
  for (const box of boxes) box.addEventListener('change', describe);
  describe();
  return {
    element,
    selected: () => boxes.filter((b) => b.checked).map((b) => b.value),
    onChange: (listener) => boxes.forEach((box) => box.addEventListener('change', listener)),
  };
}
