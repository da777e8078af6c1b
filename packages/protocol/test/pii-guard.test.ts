import { describe, expect, it } from 'vitest';
import { uuidv7 } from 'uuidv7';
import { detectPii, findPii } from '../src/pii-guard';

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
    '0190a6a0-0000-7000-8000-000000000001',
    'Who wins tonight?',
    'Kick-off at 20:45:00',
    '2026-11-21T10:00:00Z',
    'order-1234567890',
    'sku-4111111111111112',
    'Version 1.2.3',
    'Jersey, "home" édition',
    '1111111111111111',
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
});
