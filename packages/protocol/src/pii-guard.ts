/**
 * Privacy guard: finds values that look like personal data. It errs towards rejecting: a
 * product id that happens to be a valid card number is refused rather than risking storing one.
 * Pure string checks, so it runs in the browser too.
 */
export type PiiKind = 'email' | 'phone' | 'ip_address' | 'card_number';

export interface PiiFinding {
  path: string;
  kind: PiiKind;
}

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/;
const IPV4 = /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.])/;
// Full (eight groups) or compressed (`::`) IPv6; a clock time such as 20:45:00 is neither.
const H = '[0-9A-Fa-f]{1,4}';
const IPV6 = new RegExp(
  `(?<![\\w:])(?:(?:${H}:){7}${H}|(?:${H}(?::${H}){0,6})?::(?:${H}(?::${H}){0,6})?)(?![\\w:])`,
);
// International numbers (+ and 7-15 digits) or the common grouped national forms.
const PHONE_INTERNATIONAL = /(?<![\w+])\+\d(?:[\s().-]?\d){6,14}(?!\d)/;
// Grouped forms stand alone: inside a UUID or a SKU the same digits are not a phone number.
const PHONE_GROUPED = /(?<![\w-])\(?\d{2,4}\)?[\s.-]\d{3,4}[\s.-]\d{3,4}(?![\w-])/;
const CARD_CANDIDATE = /(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)/g;

function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

// A UUID's dash-separated digit groups (e.g. `…-7272-9249-64312…`) can pass for a card number.
const UUID = /[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}/g;

function hasCardNumber(value: string): boolean {
  const withoutUuids = value.includes('-') ? value.replace(UUID, ' ') : value;
  for (const match of withoutUuids.matchAll(CARD_CANDIDATE)) {
    const digits = match[0].replace(/[ -]/g, '');
    if (digits.length >= 13 && digits.length <= 19 && luhnValid(digits) && !/^(\d)\1+$/.test(digits)) return true;
  }
  return false;
}

/** The kind of personal data a string looks like, or null. */
export function detectPii(value: string): PiiKind | null {
  // Cheap pre-checks keep the common case (short ids, words) fast.
  if (value.length < 6) return null;
  if (value.includes('@') && EMAIL.test(value)) return 'email';
  if (/\d/.test(value)) {
    if (value.includes('.') && IPV4.test(value)) return 'ip_address';
    if (hasCardNumber(value)) return 'card_number';
    if (PHONE_INTERNATIONAL.test(value) || PHONE_GROUPED.test(value)) return 'phone';
  }
  if (value.includes(':') && IPV6.test(value) && /[0-9A-Fa-f]/.test(value)) return 'ip_address';
  return null;
}

/** Every string inside `value` (objects and arrays walked) that looks like personal data. */
export function findPii(value: unknown, path = ''): PiiFinding[] {
  const findings: PiiFinding[] = [];
  walk(value, [path], findings, 0);
  return findings;
}

const MAX_DEPTH = 32;

/**
 * `segments` is the path so far: `path` first, then keys and indexes as they are. The pointer
 * is only written out for a finding: almost every event has none.
 */
function walk(value: unknown, segments: string[], out: PiiFinding[], depth: number): void {
  if (typeof value === 'string') {
    const kind = detectPii(value);
    if (kind) out.push({ path: pointer(segments), kind });
    return;
  }
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      segments.push(String(i));
      walk(value[i], segments, out, depth + 1);
      segments.pop();
    }
    return;
  }
  for (const key of Object.keys(value)) {
    segments.push(key);
    const kind = detectPii(key);
    if (kind) out.push({ path: pointer(segments), kind });
    walk((value as Record<string, unknown>)[key], segments, out, depth + 1);
    segments.pop();
  }
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
    .map((segment) => (detectPii(segment.replace(/~1/g, '/').replace(/~0/g, '~')) ? '[redacted]' : segment))
    .join('/');
}
