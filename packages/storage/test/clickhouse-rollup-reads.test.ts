import { describe, expect, it } from 'vitest';
import { unansweredRows } from '../src/clickhouse/ch-answered-broadcasts';
import { NO_ROW, rollupRows, storedRows, type RangeHours } from '../src/clickhouse/ch-rollup-reads';
import { SESSION_HOURS } from '../src/clickhouse/ch-rollups';

const HOUR = 3_600_000;
const filter = { tenantSeq: 1 };
/** Two derived hours and a cut hour read from the events. */
const range: RangeHours = { derived: [{ from: 10 * HOUR, to: 11 * HOUR, derivation: 7 }], derivedHours: 2, pending: [[12 * HOUR, 12 * HOUR + 1_000]] };

describe('rollup rows of a range (ClickHouse statements)', () => {
  it('leaves the derived hours out of the statement when a condition says no row there is read', () => {
    expect(storedRows(SESSION_HOURS, filter, range, false, [NO_ROW])).toBeNull();
    expect(storedRows(SESSION_HOURS, filter, range, false, ['country = \'FR\''])).toContain('FROM session_hours WHERE');
    // A condition that only holds a 0 (the funnel's crossing sessions) still reads the hours.
    expect(storedRows(SESSION_HOURS, filter, range, false, ['(0 OR session_key IN (1, 2))'])).toContain('FROM session_hours WHERE');
    // Every broadcast of the derived hours answered: only the pending times are read.
    const allAnswered = rollupRows(SESSION_HOURS, filter, range, false, [], unansweredRows({ answers: [['b1', 5]], othersLeft: false, otherHours: [] }));
    expect(allAnswered).not.toContain('FROM session_hours');
    expect(allAnswered).toContain('FROM events WHERE');
    // Others left in hour 10: their rows there are read.
    const othersLeft = rollupRows(SESSION_HOURS, filter, range, false, [], unansweredRows({ answers: [['b1', 5]], othersLeft: true, otherHours: [10 * HOUR] }));
    expect(othersLeft).toContain('FROM session_hours WHERE');
    // Nothing to read at all: the table's columns, no row.
    expect(rollupRows(SESSION_HOURS, filter, { ...range, pending: [] }, false, [], unansweredRows({ answers: [['b1', 5]], othersLeft: false, otherHours: [] }))).toBe(
      '(SELECT * FROM session_hours WHERE 0)',
    );
  });
});
