import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlLiteralError, sqlIdentifier, sqlInteger, sqlList, sqlLiteral, sqlNumber, sqlString } from '../src/clickhouse/sql-literal';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';

/** Any UTF-16 code unit: lone surrogates, pairs, U+0000, control characters. */
const anyCodeUnits = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 40 }).map((units) => String.fromCharCode(...units));
/** Text built from pieces that break naive quoting. */
const hostile = fc
  .array(fc.constantFrom("'", '\\', "\\'", "''", '\u0000', '\n', '\r', '\t', '\u007f', '\u2028', '😀', 'é', '\ud800', '\udc00', '--', '/*', '*/', ';', 'x'), { maxLength: 20 })
  .map((parts) => parts.join(''));

describe('SQL literals', () => {
  it('escapes the quote, the backslash and control characters, and nothing else', () => {
    expect(sqlString("it's")).toBe("'it\\'s'");
    expect(sqlString('a\\b')).toBe("'a\\\\b'");
    expect(sqlString('\u0000\n\r\t\u007f')).toBe("'\\x00\\x0a\\x0d\\x09\\x7f'");
    expect(sqlString('é😀\u2028')).toBe("'é😀\u2028'");
  });

  it('writes a lone surrogate as U+FFFD and keeps a pair', () => {
    expect(sqlString('a\ud800b\udc00')).toBe("'a\ufffdb\ufffd'");
    expect(sqlString('😀')).toBe("'\ud83d\ude00'");
  });

  it('never lets a string end its literal early', () => {
    fc.assert(
      fc.property(fc.oneof(anyCodeUnits, hostile), (text) => {
        const literal = sqlString(text);
        const inside = literal.slice(1, -1);
        // Every quote inside is escaped, and no escape is left dangling at the end.
        expect(inside.replace(/\\./gs, '')).not.toMatch(/['\\]/);
        expect(literal.startsWith("'") && literal.endsWith("'")).toBe(true);
        expect(inside).not.toMatch(/[\u0000-\u001f\u007f]/);
      }),
    );
  });

  it('writes finite numbers only', () => {
    expect(sqlNumber(12)).toBe('12');
    expect(sqlNumber(0.1)).toBe('0.1');
    expect(sqlNumber(-3)).toBe('(-3)');
    expect(sqlNumber(-0)).toBe('0');
    expect(sqlNumber(1e21)).toBe('1e+21');
    expect(sqlNumber(2.2250738585072014e-308)).toBe('2.2250738585072014e-308');
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 5e-324, -4.4e-323]) expect(() => sqlNumber(bad)).toThrow(SqlLiteralError);
    expect(() => sqlNumber('1' as unknown as number)).toThrow(SqlLiteralError);
  });

  it('writes safe integers only as integers', () => {
    expect(sqlInteger(2 ** 53 - 1)).toBe('9007199254740991');
    expect(() => sqlInteger(2 ** 53)).toThrow(SqlLiteralError);
    expect(() => sqlInteger(1.5)).toThrow(SqlLiteralError);
  });

  it('writes NULL, strings and numbers, and lists of them; refuses other values', () => {
    expect(sqlLiteral(null)).toBe('NULL');
    expect(sqlList(['a', 1, null])).toBe("('a', 1, NULL)");
    expect(() => sqlList([])).toThrow(SqlLiteralError);
    expect(() => sqlLiteral(true as unknown as string)).toThrow(SqlLiteralError);
    expect(() => sqlLiteral(undefined as unknown as string)).toThrow(SqlLiteralError);
    expect(() => sqlString(1 as unknown as string)).toThrow(SqlLiteralError);
  });

  it('takes identifiers only from the allow-list, and only plain ones', () => {
    const columns = ['event', 'user_id'] as const;
    expect(sqlIdentifier('user_id', columns)).toBe('user_id');
    expect(() => sqlIdentifier('user_id; DROP TABLE events', columns)).toThrow(SqlLiteralError);
    expect(() => sqlIdentifier('USER_ID', columns)).toThrow(SqlLiteralError);
    expect(() => sqlIdentifier('a b', ['a b'])).toThrow(SqlLiteralError);
  });
});

const available = clickhouseAvailable();

describe.runIf(available)('SQL literals read back by ClickHouse', () => {
  let server: ClickHouseServer;
  beforeAll(async () => {
    server = await startClickHouse();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** The values of one SELECT of the literals, as ClickHouse reads them (one request). */
  const readBack = async (literals: string[]): Promise<unknown[]> => {
    const sql = `SELECT ${literals.map((l, i) => `${l} AS v${i}`).join(', ')} FORMAT JSONEachRow`;
    const response = await fetch(server.url, { method: 'POST', body: sql });
    const text = await response.text();
    if (!response.ok) throw new Error(`${sql}: ${text}`);
    const row = JSON.parse(text) as Record<string, unknown>;
    return literals.map((_, i) => row[`v${i}`]);
  };

  it('reads every string back as it was (lone surrogates as U+FFFD)', async () => {
    const samples = fc.sample(fc.oneof(anyCodeUnits, hostile, fc.string({ unit: 'binary' })), 300);
    samples.push('', "'", '\\', '\\x41', "\\'", '\u0000', 'a\u0000b', '\ud800', '😀');
    const values = await readBack(samples.map(sqlString));
    expect(values).toEqual(samples.map((s) => s.toWellFormed()));
  });

  it('reads every finite number back as it was', async () => {
    // Subnormal numbers are refused (18.16 cannot read them), so they are not sampled.
    const normal = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => n === 0 || Math.abs(n) >= 2.2250738585072014e-308);
    const samples = fc.sample(fc.oneof(normal, fc.integer(), fc.maxSafeInteger()), 200);
    samples.push(0, -0, 1e21, -1e-7, 2.2250738585072014e-308, Number.MAX_VALUE, -Number.MAX_SAFE_INTEGER);
    // Arithmetic around a negative literal stays arithmetic (`1 - -1` is not a comment).
    const [difference] = await readBack([`1 - ${sqlNumber(-1)}`]);
    expect(Number(difference)).toBe(2);
    const values = await readBack(samples.map((n) => `toFloat64(${sqlNumber(n)})`));
    expect(values.map(Number)).toEqual(samples.map((n) => (Object.is(n, -0) ? 0 : n)));
  });
});
