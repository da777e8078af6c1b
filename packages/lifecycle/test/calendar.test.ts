import { describe, expect, it } from 'vitest';
import { subtractMonths } from '../src/calendar';

describe('subtractMonths', () => {
  const at = (iso: string) => Date.parse(iso);
  it.each([
    ['2027-01-15T12:00:00.000Z', 12, '2026-01-15T12:00:00.000Z'],
    ['2026-03-31T08:30:00.000Z', 1, '2026-02-28T08:30:00.000Z'],
    ['2028-03-31T00:00:00.000Z', 1, '2028-02-29T00:00:00.000Z'],
    ['2026-01-10T00:00:00.000Z', 1, '2025-12-10T00:00:00.000Z'],
    ['2026-05-31T23:59:59.999Z', 24, '2024-05-31T23:59:59.999Z'],
  ])('%s minus %i months is %s', (from, months, expected) => {
    expect(new Date(subtractMonths(at(from), months)).toISOString()).toBe(expected);
  });
});
