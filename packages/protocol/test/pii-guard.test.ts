import { describe, expect, it } from 'vitest';
import { uuidv7 } from 'uuidv7';
import { MAX_EVENT_DEPTH } from '../src/event-limits';
import { cleanKeysOf, detectPii, findPii, maskPii, redactText } from '../src/pii-guard';
import { eventFieldNames } from '../src/event-schemas';
import { seededRandom } from '../src/seeded-random';
import { ordinaryStrings, PERSONAL_VALUES } from './pii-corpus';

/** `leaf` inside `levels` nested objects under `key` (the outermost object is level 1). */
function nested(levels: number, leaf: unknown, key = 'a'): Record<string, unknown> {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { [key]: value };
  return value as Record<string, unknown>;
}

describe('privacy guard', () => {
  it.each([
    ['jane.doe@example.com', 'email'],
    ['write to jane@mail.example.org today', 'email'],
    ['+49 170 1234567', 'phone'],
    ['+14155552671', 'phone'],
    ['(555) 123-4567', 'phone'],
    ['030 1234 5678', 'phone'],
    ['192.168.1.20', 'ip_address'],
    ['from 8.8.8.8 yesterday', 'ip_address'],
    ['2001:db8::ff00:42:8329', 'ip_address'],
    ['fe80:0:0:0:0:0:0:1', 'ip_address'],
    ['4111 1111 1111 1111', 'card_number'],
    ['5500-0000-0000-0004', 'card_number'],
    ['378282246310005', 'card_number'],
  ])('flags %s as %s', (value, kind) => {
    expect(detectPii(value)).toBe(kind);
  });

  it.each([
    'user-42',
    'svc_01JD4W3G6QZ5K7M8N9P0R1S2T3',
    // Session ids whose hex holds a Luhn-valid run: part of the token, not a card number.
    'svc_sampleab4111111111111111cd',
    'svc_sim0190a6a0f5500000000000004e',
    '0190a6a0-0000-7000-8000-000000000001',
    'Who wins tonight?',
    'Kick-off at 20:45:00',
    '2026-11-21T10:00:00Z',
    'order-1234567890',
    'sku-4111111111111112',
    'Version 1.2.3',
    'Jersey, "home" édition',
    '1111111111111111',
    '0.123456789',
    '10000-20000',
    // An EAN-13 barcode whose digits also pass the Luhn check.
    '4006381333924',
    '1732531200123',
    '1764000000',
    '25.11.2026 20:45',
    'a :: b',
    '512345678',
  ])('lets %s through', (value) => {
    expect(detectPii(value)).toBeNull();
  });

  it('never takes a UUID for a card number, alone or inside an id, and still finds a card next to one', () => {
    // This one's groups 7272-9249-64312 pass the Luhn check.
    expect(detectPii('ord_01a2014f-bfef-7272-9249-64312ca6c193')).toBeNull();
    for (let i = 0; i < 20_000; i++) {
      const id = i % 2 ? crypto.randomUUID() : uuidv7();
      expect(detectPii(`ord_${id}`), id).toBeNull();
    }
    expect(detectPii('01a2014f-bfef-7272-9249-64312ca6c193 4111 1111 1111 1111')).toBe('card_number');
  });

  it('walks nested objects and arrays, keys included, and reports JSON Pointer paths', () => {
    const findings = findPii({ a: ['ok', { b: 'x@y.io' }], 'c/d': '10.1.2.3', ['me@home.net']: 1 }, '/data');
    expect(findings).toEqual([
      { path: '/data/a/1/b', kind: 'email' },
      { path: '/data/c~1d', kind: 'ip_address' },
      { path: '/data/me@home.net', kind: 'email' },
    ]);
  });

  it('skips only the keys it is told are clean, never their values, and is told only of keys without personal data', () => {
    const clean = cleanKeysOf(['userId', 'data', 'ann@example.com', '+49 30 1234567']);
    expect([...clean]).toEqual(['userId', 'data']);
    const event = { userId: 'ann@example.com', data: { 'bob@example.com': 1, userId: 'x' } };
    expect(findPii(event, '', clean)).toEqual([
      { path: '/userId', kind: 'email' },
      { path: '/data/bob@example.com', kind: 'email' },
    ]);
    expect(findPii(event, '', clean)).toEqual(findPii(event));
    // Every field name of the event schemas is clean, so the validator skips all of them.
    expect(cleanKeysOf(eventFieldNames()).size).toBe(eventFieldNames().size);
    expect(eventFieldNames()).toEqual(new Set(['event', 'eventId', 'userId', 'sessionId', 'broadcastId', 'campaignId', 'timestamp', 'country', 'data', 'reason', 'watchedMs', 'pollId', 'questionText', 'optionSelected', 'optionIndex', 'contestId', 'title', 'lineupId', 'momentId', 'sponsorId', 'orderId', 'items', 'total', 'productId', 'name', 'quantity', 'unitPrice', 'currency', 'placement', 'step']));
  });

  it('catches every personal value of its corpus and flags fewer than 1 in 1,000 ordinary strings', () => {
    const caught = PERSONAL_VALUES.filter(([value, kind]) => detectPii(value) === kind);
    const missed = PERSONAL_VALUES.filter(([value, kind]) => detectPii(value) !== kind).map(([value]) => value);
    const ordinary = ordinaryStrings(seededRandom(20_261_125), 20_000);
    const flagged = ordinary.filter((value) => detectPii(value) !== null);
    const recall = caught.length / PERSONAL_VALUES.length;
    const falsePositiveRate = flagged.length / ordinary.length;
    console.log(
      `privacy guard: recall ${(recall * 100).toFixed(1)}% (${caught.length}/${PERSONAL_VALUES.length} personal values); ` +
        `false positives ${(falsePositiveRate * 1000).toFixed(2)} per 1,000 (${flagged.length}/${ordinary.length} ordinary strings)`,
    );
    expect(missed).toEqual([]);
    expect(recall).toBe(1);
    expect(falsePositiveRate, flagged.slice(0, 10).join(' | ')).toBeLessThan(1 / 1000);
  });

  it('reads text after Unicode normalisation: full-width characters and digits of any script', () => {
    expect(detectPii('jane＠example.com')).toBe('email');
    expect(detectPii('٠١٧٠١٢٣٤٥٦٧')).toBe('phone');
    expect(detectPii('०१७०१२३४५६७')).toBe('phone');
    expect(detectPii('０１７０１２３４５６７')).toBe('phone');
    expect(detectPii('١٩٢.١٦٨.١.٢٠')).toBe('ip_address');
    // Non-ASCII text without personal data stays clean.
    expect(detectPii('Größe M, édition spéciale ٣')).toBeNull();
  });

  it(`checks every level up to ${MAX_EVENT_DEPTH} and reports anything deeper as too deep, never skipping it`, () => {
    // The outermost object is level 1: the e-mail sits in an object at the last level read.
    expect(findPii(nested(MAX_EVENT_DEPTH, 'jane@example.com'))).toEqual([{ path: `/${Array(MAX_EVENT_DEPTH).fill('a').join('/')}`, kind: 'email' }]);
    expect(findPii(nested(MAX_EVENT_DEPTH, 'clean'))).toEqual([]);
    const tooDeep = findPii(nested(MAX_EVENT_DEPTH + 1, 'jane@example.com'));
    expect(tooDeep).toEqual([{ path: `/${Array(MAX_EVENT_DEPTH).fill('a').join('/')}`, kind: 'too_deep' }]);
    // An IP address as a key at depth 40 is reported too: the branch is too deep.
    expect(findPii(nested(39, { '10.1.2.3': 1 })).map((f) => f.kind)).toEqual(['too_deep']);
    expect(findPii(nested(3, { '10.1.2.3': 1 }))).toEqual([{ path: '/a/a/a/10.1.2.3', kind: 'ip_address' }]);
  });

  it('masks a copy: personal strings redacted, personal keys dropped, too-deep branches cut', () => {
    const masked = maskPii({
      event: 'pii.evname@example.com',
      ok: ['fine', '030 12345678'],
      ['me@home.net']: 'x',
      deep: nested(MAX_EVENT_DEPTH, 'jane@example.com'),
      ['__proto__']: 'kept as a key',
    });
    const text = JSON.stringify(masked);
    expect(text).not.toMatch(/example\.com|home\.net|12345678/);
    expect(masked).toMatchObject({ event: '[redacted]', ok: ['fine', '[redacted]'] });
    expect(Object.hasOwn(masked as object, '__proto__')).toBe(true);
    expect(redactText('pii.evname@example.com')).toBe('[redacted]');
    expect(redactText('poll.voted')).toBe('poll.voted');
  });
});

