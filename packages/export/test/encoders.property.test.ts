import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CSV_COLUMNS, toExportRecord, type StoredEvent } from '@svc/protocol';
import { CSV_HEADER } from '../src/csv';
import { field, storedEvent } from './arbitraries';
import { csvField, eventToCsv, eventToNdjson } from './reference-encoders';

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

describe('export encoding (properties of the reference encoders)', () => {
  it('CSV: a standard RFC 4180 parser reads back every field exactly, through UTF-8', () => {
    fc.assert(
      fc.property(fc.array(storedEvent, { maxLength: 8 }), (events) => {
        const csv = CSV_HEADER + events.map((e) => eventToCsv(e)).join('');
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
