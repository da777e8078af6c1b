import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan, parseClientJson, wellFormedText, wellFormedValue } from '../src/index';

describe('well-formed text', () => {
  it('replaces each lone surrogate with U+FFFD and keeps pairs, NUL, U+FEFF and non-characters', () => {
    expect(wellFormedText('a\ud800b\udc00c')).toBe('a\ufffdb\ufffdc');
    expect(wellFormedText('\udbff')).toBe('\ufffd');
    const kept = '\u0000\ufeff\uffff\ufdd0\u{1f600}\u{10ffff}';
    expect(wellFormedText(kept)).toBe(kept);
  });

  it('mends every string and key of a parsed body at any depth, in place', () => {
    const value = parseClientJson('{"events":[{"data":{"q":"\\ud800","k\\udc00":["x\\udfff",{"deep":"\\udbff\\udbff"}]}}]}');
    expect(value).toEqual({ events: [{ data: { q: '\ufffd', 'k\ufffd': ['x\ufffd', { deep: '\ufffd\ufffd' }] } }] });
  });

  it('walks a value nested 100,000 levels deep without overflowing the stack', () => {
    const text = `${'['.repeat(100_000)}"\\ud800"${']'.repeat(100_000)}`;
    let node = parseClientJson(text) as unknown;
    while (Array.isArray(node)) node = node[0];
    expect(node).toBe('\ufffd');
  });

  it('makes every string and key well-formed, and changes nothing that already was, for arbitrary JSON values', () => {
    const texts = (value: unknown): string[] =>
      typeof value === 'string' ? [value]
        : value !== null && typeof value === 'object' ? Object.entries(value).flatMap(([key, item]) => [...(Array.isArray(value) ? [] : [key]), ...texts(item)])
          : [];
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.string({ unit: 'binary' }), (value, key) => {
        const sent = { [key]: value, value: key };
        const json = JSON.stringify(sent);
        const parsed = parseClientJson(json);
        for (const text of texts(parsed)) expect(text.isWellFormed()).toBe(true);
        // Compared with what JSON itself gives back (-0 travels as 0).
        if (texts(sent).every((text) => text.isWellFormed())) expect(parsed).toEqual(JSON.parse(json));
      }),
    );
  });

  it('returns the value itself for containers and scalars', () => {
    const value = { a: 1 };
    expect(wellFormedValue(value)).toBe(value);
    expect(wellFormedValue(null)).toBe(null);
    expect(wellFormedValue(5)).toBe(5);
  });
});

describe('nesting depth', () => {
  const nested = (levels: number): unknown => (levels === 0 ? 'leaf' : { a: nested(levels - 1) });

  it('counts the value itself as level 1 and stops at the limit', () => {
    expect(nestsDeeperThan(nested(32), 32)).toBe(false);
    expect(nestsDeeperThan(nested(33), 32)).toBe(true);
    expect(nestsDeeperThan([[[]]], 3)).toBe(false);
    expect(nestsDeeperThan([[[[]]]], 3)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
  });

  it('answers for a value 100,000 levels deep without overflowing the stack', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(nestsDeeperThan(deep, 32)).toBe(true);
  });
});
