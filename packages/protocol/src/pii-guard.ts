import { MAX_EVENT_DEPTH } from './event-limits';
import { guardText } from './guard-text';
import { hasCardNumber } from './card-number';
import { hasPhoneNumber } from './phone-number';

/**
 * Privacy guard: finds values that look like personal data. It errs towards rejecting: a
 * product id that happens to be a valid card number is refused rather than risking storing one.
 * Pure string checks, so it runs in the browser too. Every text is read after Unicode
 * normalisation (`guardText`), so a full-width `＠` or Arabic-Indic digits hide nothing.
 */
export type PiiKind = 'email' | 'phone' | 'ip_address' | 'card_number';

/**
 * What the guard reports at a path: personal data, or (`too_deep`) a value nested deeper than
 * `MAX_EVENT_DEPTH`, which the guard did not read and which therefore must not be kept.
 */
export type GuardFindingKind = PiiKind | 'too_deep';

export interface PiiFinding {
  path: string;
  kind: GuardFindingKind;
}

/** What a masked value or key is replaced with. */
export const PII_REDACTED = '[redacted]';
/** What a masked copy holds in place of a container nested deeper than `MAX_EVENT_DEPTH`. */
export const NESTED_TOO_DEEP = '[nested too deep]';

const EMAIL = /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}/u;
const IPV4 = /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.])/;
// Full (eight groups) or compressed (`::`) IPv6; a clock time such as 20:45:00 is neither.
const H = '[0-9A-Fa-f]{1,4}';
const IPV6 = new RegExp(
  `(?<![\\w:])(?:(?:${H}:){7}${H}|(?:${H}(?::${H}){0,6})?::(?:${H}(?::${H}){0,6})?)(?![\\w:])`,
  'g',
);
/** The kind of personal data a string looks like, or null. */
export function detectPii(value: string): PiiKind | null {
  let text = value;
  let shape = shapeOf(text);
  if (shape.nonAscii) {
    text = guardText(value);
    shape = shapeOf(text);
  }
  // Cheap pre-checks keep the common case (short ids, words, event ids, timestamps) fast:
  // each kind needs a least number of digits or a character that most strings lack.
  if (text.length < 6) return null;
  if (shape.at && EMAIL.test(text)) return 'email';
  if (shape.digits < 4) return shape.colons >= 2 && hasIpv6(text) ? 'ip_address' : null;
  if (isCanonicalUuid(text, shape) || isCanonicalTimestamp(text, shape)) return null;
  if (shape.dots >= 3 && IPV4.test(text)) return 'ip_address';
  if (shape.digits >= 13 && hasCardNumber(text)) return 'card_number';
  if (shape.digits >= 7 && hasPhoneNumber(text)) return 'phone';
  if (shape.colons >= 2 && hasIpv6(text)) return 'ip_address';
  return null;
}

/** An address, not a bare `::` (as in `a :: b`). */
function hasIpv6(text: string): boolean {
  for (const match of text.matchAll(IPV6)) if (/[0-9A-Fa-f]/.test(match[0])) return true;
  return false;
}

interface TextShape {
  digits: number;
  dashes: number;
  dots: number;
  colons: number;
  /** Characters that are none of the above and no hex letter. */
  others: number;
  at: boolean;
  nonAscii: boolean;
}

/** One pass over the text, counting what the checks need. */
function shapeOf(text: string): TextShape {
  const shape: TextShape = { digits: 0, dashes: 0, dots: 0, colons: 0, others: 0, at: false, nonAscii: false };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const lower = c | 32;
    if (c >= 48 && c <= 57) shape.digits++;
    else if (lower >= 97 && lower <= 102) continue;
    else if (c === 45) shape.dashes++;
    else if (c === 46) shape.dots++;
    else if (c === 58) shape.colons++;
    else {
      shape.others++;
      if (c === 64) shape.at = true;
      else if (c > 127) shape.nonAscii = true;
    }
  }
  return shape;
}

// An event id or a timestamp as the SDK writes them fill most strings of every event; none of
// the kinds above can hide in one, so they skip the pattern searches.
function isCanonicalUuid(text: string, shape: TextShape): boolean {
  return (
    text.length === 36 && shape.dashes === 4 && shape.others === 0 && shape.dots === 0 && shape.colons === 0 &&
    text.charCodeAt(8) === 45 && text.charCodeAt(13) === 45 && text.charCodeAt(18) === 45 && text.charCodeAt(23) === 45
  );
}

/** `2026-11-25T20:45:00.000Z`, as `Date#toISOString` writes it. */
function isCanonicalTimestamp(text: string, shape: TextShape): boolean {
  return (
    text.length === 24 && shape.digits === 17 && shape.dashes === 2 && shape.colons === 2 && shape.dots === 1 &&
    text.charCodeAt(4) === 45 && text.charCodeAt(7) === 45 && text.charCodeAt(10) === 84 && text.charCodeAt(13) === 58 &&
    text.charCodeAt(16) === 58 && text.charCodeAt(19) === 46 && text.charCodeAt(23) === 90
  );
}

/** `value` itself, or `[redacted]` when it looks like personal data (for texts echoed in details). */
export function redactText(value: string): string {
  return detectPii(value) ? PII_REDACTED : value;
}

/**
 * Every string and every key inside `value` (objects and arrays walked) that looks like personal
 * data, and every object or array nested deeper than `MAX_EVENT_DEPTH` levels, counting `value`
 * itself as level 1 (reported as `too_deep`, never skipped silently). Keys in `cleanKeys` are
 * not looked at: the caller knows `detectPii` finds nothing in them (the field names of the
 * event schemas, which are most keys of every event; their checks took over a third of the guard's time).
 */
export function findPii(value: unknown, path = '', cleanKeys: ReadonlySet<string> = NO_KEYS): PiiFinding[] {
  const findings: PiiFinding[] = [];
  walk(value, [path], findings, 1, cleanKeys);
  return findings;
}

const NO_KEYS: ReadonlySet<string> = new Set();

/** The keys of `keys` in which `detectPii` finds nothing, for `findPii`'s `cleanKeys`. */
export function cleanKeysOf(keys: Iterable<string>): ReadonlySet<string> {
  return new Set([...keys].filter((key) => !detectPii(key)));
}

/**
 * `segments` is the path so far: `path` first, then keys and indexes as they are. The pointer
 * is only written out for a finding: almost every event has none.
 */
function walk(value: unknown, segments: string[], out: PiiFinding[], level: number, cleanKeys: ReadonlySet<string>): void {
  if (typeof value === 'string') {
    const kind = detectPii(value);
    if (kind) out.push({ path: pointer(segments), kind });
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (level > MAX_EVENT_DEPTH) {
    out.push({ path: pointer(segments), kind: 'too_deep' });
    return;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      segments.push(String(i));
      walk(value[i], segments, out, level + 1, cleanKeys);
      segments.pop();
    }
    return;
  }
  for (const key of Object.keys(value)) {
    segments.push(key);
    const kind = cleanKeys.has(key) ? null : detectPii(key);
    if (kind) out.push({ path: pointer(segments), kind });
    walk((value as Record<string, unknown>)[key], segments, out, level + 1, cleanKeys);
    segments.pop();
  }
}

/**
 * A copy of `value` that keeps no personal data: every string that looks like it becomes
 * `[redacted]`, every key that does is dropped with its value, and every object or array nested
 * deeper than the guard reads becomes `[redacted]`. `value` itself is level 1.
 */
export function maskPii(value: unknown, level = 1): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (level > MAX_EVENT_DEPTH) return NESTED_TOO_DEEP;
  if (Array.isArray(value)) return value.map((item) => maskPii(item, level + 1));
  // fromEntries defines own properties, so a `__proto__` key stays an ordinary key.
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !detectPii(key))
      .map(([key, item]) => [key, maskPii(item, level + 1)]),
  );
}

function pointer(segments: string[]): string {
  let path = segments[0]!;
  for (let i = 1; i < segments.length; i++) path += `/${escapePointer(segments[i]!)}`;
  return path;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** A JSON Pointer with every segment that looks like personal data replaced by `[redacted]`. */
export function redactPointer(pointer: string): string {
  return pointer
    .split('/')
    .map((segment) => (detectPii(segment.replace(/~1/g, '/').replace(/~0/g, '~')) ? PII_REDACTED : segment))
    .join('/');
}
