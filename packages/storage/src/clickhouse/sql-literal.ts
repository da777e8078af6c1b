/**
 * The one way values enter ClickHouse SQL text. ClickHouse 18.16 has no server-side query
 * parameters, so every value a statement needs is written here as a literal that the server
 * reads back as exactly that value (tested against a real server), and every identifier comes
 * from an allow-list. Nothing else in the ClickHouse backend may paste a value into SQL.
 */

/** A value this encoder can write. */
export type SqlValue = string | number | null;

/** A value that has no ClickHouse literal (a non-finite number, an unsafe integer, a name not allowed). */
export class SqlLiteralError extends Error {
  override readonly name = 'SqlLiteralError';
}

/** A UTF-16 surrogate without its pair: it has no UTF-8 form. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** Characters escaped inside a string literal: the quote, the backslash, and every control character. */
const NEEDS_ESCAPE = /['\\\u0000-\u001f\u007f]/g;

function escapeChar(char: string): string {
  if (char === "'") return "\\'";
  if (char === '\\') return '\\\\';
  // `\xHH` is read as that byte by every ClickHouse version; it spells U+0000 and line breaks too.
  return `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;
}

/**
 * A single-quoted string literal. A lone surrogate becomes U+FFFD, as storage holds it (the
 * ingest edge mends text the same way, and UTF-8 has no spelling for one).
 */
export function sqlString(value: string): string {
  if (typeof value !== 'string') throw new SqlLiteralError(`Not a string: ${typeof value}`);
  const wellFormed = value.replace(LONE_SURROGATE, '\ufffd');
  return `'${wellFormed.replace(NEEDS_ESCAPE, escapeChar)}'`;
}

/** The smallest positive normal double; ClickHouse 18.16's parser refuses literals below it (`4.4e-323`). */
const MIN_NORMAL_DOUBLE = 2.2250738585072014e-308;

/**
 * A numeric literal of a finite number (shortest round-trip digits, as String(number) writes
 * them). NaN and ±Infinity are refused: no stored value is one, so a filter holding one is a bug.
 * So are subnormal numbers (0 < |x| < 2.2e-308), which 18.16 cannot read as literals.
 */
export function sqlNumber(value: number): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new SqlLiteralError(`Not a finite number: ${String(value)}`);
  if (value !== 0 && Math.abs(value) < MIN_NORMAL_DOUBLE) throw new SqlLiteralError(`A subnormal number has no literal: ${String(value)}`);
  // A negative literal in parentheses: `x - -1` and `x--1` (a comment) must never arise.
  const text = Object.is(value, -0) ? '0' : String(value);
  return value < 0 ? `(${text})` : text;
}

/** An integer literal; refuses fractions and integers beyond ±(2^53 − 1), which a number cannot hold exactly. */
export function sqlInteger(value: number): string {
  if (!Number.isSafeInteger(value)) throw new SqlLiteralError(`Not a safe integer: ${String(value)}`);
  return sqlNumber(value);
}

/** The literal of a string, a finite number, or NULL. */
export function sqlLiteral(value: SqlValue): string {
  if (value === null) return 'NULL';
  if (typeof value === 'string') return sqlString(value);
  if (typeof value === 'number') return sqlNumber(value);
  throw new SqlLiteralError(`No SQL literal for a ${typeof value}`);
}

/** `(a, b, …)` for `IN`; refuses an empty list (`IN ()` is not SQL). */
export function sqlList(values: readonly SqlValue[]): string {
  if (!values.length) throw new SqlLiteralError('An empty list has no SQL literal');
  return `(${values.map(sqlLiteral).join(', ')})`;
}

/** An identifier ClickHouse reads without quoting, which is also a valid database name. */
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `name` if it is one of `allowed`, else an error. Allowed names must be plain identifiers, so
 * none needs quoting (and none can end a quoted one).
 */
export function sqlIdentifier<T extends string>(name: string, allowed: readonly T[]): T {
  const found = allowed.find((candidate) => candidate === name);
  if (found === undefined) throw new SqlLiteralError(`Not an allowed name: ${JSON.stringify(name)}`);
  if (!PLAIN_IDENTIFIER.test(found)) throw new SqlLiteralError(`Not a plain identifier: ${JSON.stringify(found)}`);
  return found;
}

/** Whether `name` is a plain identifier (letters, digits, `_`; not starting with a digit). */
export function isPlainIdentifier(name: string): boolean {
  return PLAIN_IDENTIFIER.test(name);
}
