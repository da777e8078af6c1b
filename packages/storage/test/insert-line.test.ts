import { describe, expect, it } from 'vitest';
import { fromInsertLine, INSERT_LINE_COLUMNS, insertLine, toInsertRow } from '../src/clickhouse/event-sql';
import { eventRow } from './event-log-rows';

describe('the JSONEachRow line of an event', () => {
  it('is the text JSON.stringify writes for its insert row, whatever the text and numbers hold', () => {
    const rows = [
      eventRow(1),
      eventRow(2, { eventId: eventRow(2).eventId.toUpperCase(), userId: null, country: null, orderId: null, sponsorId: null, total: null, items: null }),
      eventRow(3, { event: 'poll.voted', userId: 'lone \ud800 "quote" \\ back \u0000 nul \u001f', sessionId: '\u2028\u2029 \udfff\ud800', data: '{"x":"\\"y\\"","\u00e9":"\ud83d\ude00"}' }),
      eventRow(4, { total: -0, campaignId: 2 ** 53 - 1, timestampMs: -1, receivedAtMs: 0 }),
      eventRow(5, { total: 1e21, broadcastId: '' }),
      eventRow(6, { total: 0.1 + 0.2, sponsorId: 'sp\tq\n', items: '[]' }),
      eventRow(7, { total: Number.NaN, campaignId: Number.POSITIVE_INFINITY }),
      eventRow(8, { eventId: 'not "a" uuid \ud800', country: 'D\u007fE', event: '\u00e9v\u00e9nement \ud83d\ude00' }),
    ];
    for (const row of rows) expect(insertLine(row)).toBe(JSON.stringify(toInsertRow(row)));
    // Its insert names these columns.
    for (const row of rows) expect(Object.keys(JSON.parse(insertLine(row)) as object)).toEqual(INSERT_LINE_COLUMNS);
  });

  it('reads back as the event, its id lowercase and its text well-formed', () => {
    const row = eventRow(8, { eventId: eventRow(8).eventId.toUpperCase(), userId: 'a\ud800b' });
    expect(fromInsertLine(insertLine(row))).toEqual({ ...row, eventId: row.eventId.toLowerCase(), userId: 'a\ufffdb' });
  });
});
