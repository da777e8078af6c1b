import fc from 'fast-check';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { describe, expect, it } from 'vitest';
import { dateTimeFormat, isValidCanonicalUtc } from '../src/date-time-format';

const rfc3339 = (fullFormats['date-time'] as { validate: (text: string) => boolean }).validate;

describe('the date-time format of events', () => {
  it('takes the fast path for timestamps as Date#toISOString writes them', () => {
    for (const text of ['2026-11-25T20:45:00.000Z', '2024-02-29T23:59:59.999Z', '2000-02-29T00:00:00.000Z', '0000-01-01T00:00:00.000Z']) {
      expect(isValidCanonicalUtc(text), text).toBe(true);
      expect(dateTimeFormat.validate(text), text).toBe(true);
    }
  });

  it('leaves impossible dates, leap seconds and other shapes to the full RFC 3339 check', () => {
    const cases: Array<[string, boolean]> = [
      ['2026-02-29T10:00:00.000Z', false],
      ['1900-02-29T10:00:00.000Z', false],
      ['2026-04-31T10:00:00.000Z', false],
      ['2026-13-01T10:00:00.000Z', false],
      ['2026-00-10T10:00:00.000Z', false],
      ['2026-01-00T10:00:00.000Z', false],
      ['2026-01-01T24:00:00.000Z', false],
      ['2026-01-01T10:60:00.000Z', false],
      ['2026-12-31T23:59:60.000Z', true],
      ['2026-12-31T22:59:60.000Z', false],
      ['2026-01-01t10:00:00.000z', true],
      ['2026-01-01T10:00:00+02:00', true],
      ['2026-01-01T10:00:00Z', true],
      ['2026-01-01T10:00:00.000', false],
      ['2026-01-01 10:00:00.000Z', true],
      ['2026-01-01T1a:00:00.000Z', false],
      ['2026-01-01T10:00:00.0a0Z', false],
      ['２026-01-01T10:00:00.000Z', false],
    ];
    for (const [text, valid] of cases) {
      expect(isValidCanonicalUtc(text), text).toBe(false);
      expect(dateTimeFormat.validate(text), text).toBe(valid);
      expect(rfc3339(text), text).toBe(valid);
    }
  });

  it('gives the verdict of the full check for any timestamp-shaped text', () => {
    const digit = fc.constantFrom(...'0123456789');
    const digits = (n: number) => fc.array(digit, { minLength: n, maxLength: n }).map((d) => d.join(''));
    const canonicalShape = fc
      .tuple(digits(4), digits(2), digits(2), digits(2), digits(2), digits(2), digits(3))
      .map(([y, mo, d, h, mi, s, ms]) => `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`);
    const mutated = fc.tuple(canonicalShape, fc.nat(23), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })).map(([text, at, c]) => text.slice(0, at) + c + text.slice(at + 1));
    const real = fc.date({ min: new Date(0), max: new Date(8_000_000_000_000), noInvalidDate: true }).map((d) => d.toISOString());
    fc.assert(
      fc.property(fc.oneof(canonicalShape, mutated, real), (text) => {
        expect(dateTimeFormat.validate(text)).toBe(rfc3339(text));
        if (isValidCanonicalUtc(text)) expect(rfc3339(text)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });
});
