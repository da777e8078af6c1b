import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { COMMERCE_EVENTS, EVENT_NAMES, toExportRecord, type StoredEvent } from '@svc/protocol';
import { CSV_COLUMNS, CSV_HEADER, csvField, eventToCsv } from '../src/csv';
import { eventToNdjson } from '../src/ndjson';

/** Fragments that break naive CSV and line-based readers, and spreadsheet formulas. */
const HOSTILE = ['"', '""', ',', '\r', '\n', '\r\n', '\u2028', '\u0085', '=1+1', '+cmd', '-1', '@SUM(A1)', "'; DROP TABLE events; --", '\t', ' ', '\u0000', '😀', 'é'];

const field = fc.string({ unit: fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), minLength: 1, maxLength: 20 });
const iso = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
const money = fc.integer({ min: 0, max: 1e12 }).map((cents) => cents / 100);
const data = fc.dictionary(field, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });

const storedEvent: fc.Arbitrary<StoredEvent> = fc
  .record({
    eventId: fc.uuid(),
    event: fc.constantFrom(...EVENT_NAMES),
    userId: fc.option(field, { nil: null }),
    sessionId: field,
    broadcastId: field,
    campaignId: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    timestamp: iso,
    receivedAt: iso,
    country: fc.option(fc.stringMatching(/^[A-Z]{2}$/), { nil: null }),
    data,
    orderId: fc.option(field, { nil: null }),
    sponsorId: fc.option(field, { nil: null }),
    items: fc.option(fc.array(fc.record({ productId: field, name: field, quantity: fc.integer({ min: 1, max: 10_000 }), unitPrice: money, currency: fc.constantFrom('EUR', 'USD') }), { maxLength: 3 }), { nil: null }),
    total: fc.option(money, { nil: null }),
  })
  // Only commerce events carry the commerce fields (as stored).
  .map((e) => ((COMMERCE_EVENTS as readonly string[]).includes(e.event) ? e : { ...e, orderId: null, sponsorId: null, items: null, total: null }));

/** What each CSV column must read back as, in the documented column order. */
function expectedCsvRow(e: StoredEvent): Record<string, string> {
  const text = (v: string | number | null) => (v === null ? '' : String(v));
  return {
    eventId: e.eventId,
    event: e.event,
    userId: text(e.userId),
    sessionId: e.sessionId,
    broadcastId: e.broadcastId,
    campaignId: String(e.campaignId),
    timestamp: e.timestamp,
    receivedAt: e.receivedAt,
    country: text(e.country),
    orderId: text(e.orderId),
    sponsorId: text(e.sponsorId),
    total: text(e.total),
    items: e.items === null ? '' : JSON.stringify(e.items),
    data: JSON.stringify(e.data),
  };
}

describe('export encoders (properties)', () => {
  it('CSV: a standard RFC 4180 parser reads back every field exactly, through UTF-8', () => {
    fc.assert(
      fc.property(fc.array(storedEvent, { maxLength: 8 }), (events) => {
        const csv = CSV_HEADER + events.map(eventToCsv).join('');
        const rows = parse(Buffer.from(csv, 'utf8'), { columns: true, relax_quotes: false, skip_empty_lines: false }) as Record<string, string>[];
        expect(rows).toHaveLength(events.length);
        rows.forEach((row, i) => {
          expect(Object.keys(row)).toEqual([...CSV_COLUMNS]);
          expect(row).toEqual(expectedCsvRow(events[i]!));
          expect(JSON.parse(row.data!)).toEqual(JSON.parse(JSON.stringify(events[i]!.data)));
        });
      }),
      { numRuns: 300 },
    );
  });

  it('CSV: every record ends with CRLF, has the 14 columns and quotes exactly the fields that need it', () => {
    fc.assert(
      fc.property(storedEvent, field, (event, value) => {
        expect(csvField(value).startsWith('"')).toBe(/[",\r\n]/.test(value));
        const record = eventToCsv(event);
        expect(record.endsWith('\r\n')).toBe(true);
        const fields = parse(record, { relax_quotes: false, raw: false }) as string[][];
        expect(fields).toHaveLength(1);
        expect(fields[0]).toHaveLength(CSV_COLUMNS.length);
      }),
      { numRuns: 300 },
    );
  });

  it('NDJSON: one line per event, each the export record, whatever the strings hold', () => {
    fc.assert(
      fc.property(fc.array(storedEvent, { maxLength: 8 }), (events) => {
        const text = events.map(eventToNdjson).join('');
        const lines = Buffer.from(text, 'utf8').toString('utf8').split('\n');
        expect(lines.pop()).toBe('');
        expect(lines).toHaveLength(events.length);
        lines.forEach((line, i) => {
          expect(line).not.toMatch(/[\r\n]/);
          expect(JSON.parse(line)).toEqual(JSON.parse(JSON.stringify(toExportRecord(events[i]!))));
        });
      }),
      { numRuns: 300 },
    );
  });
});
