/**
 * The From and To date inputs bound each other: From can never be after To, nor To before
 * From, and neither goes past today. A value typed outside the bounds moves the other end
 * with it, so that an inverted range cannot be made.
 */
export function boundDates(from: HTMLInputElement, to: HTMLInputElement, today: () => string): void {
  const refresh = () => {
    const last = today();
    from.max = to.value && to.value < last ? to.value : last;
    to.min = from.value;
    to.max = last;
  };
  from.addEventListener('input', () => {
    if (from.value && to.value && from.value > to.value) to.value = from.value;
    refresh();
  });
  to.addEventListener('input', () => {
    if (from.value && to.value && to.value < from.value) from.value = to.value;
    refresh();
  });
  refresh();
}
