import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { buildSdk } from '../build';

/** The bundle budget of DESIGN 10: everything, minified and gzipped. */
export const SIZE_BUDGET_BYTES = 25 * 1024;

describe('SvcCore outside the browser', () => {
  it('imports without a DOM and fails only when used', async () => {
    expect(typeof window).toBe('undefined');
    const sdk = await import('../src/index');
    expect(sdk.SvcSDK.version).toBe('0.2.0-beta');
    expect(() => sdk.SvcSDK.ready()).toThrow(expect.objectContaining({ code: 'not_configured' }));
    expect(() => sdk.SvcEngagementOverlay()).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });

  it('makes UUIDv7 event ids in time order and svc_ ULID session ids', async () => {
    const { uuidv7, ulid } = await import('../src/index');
    // Many ids in the same millisecond, enough to exhaust the per-millisecond counter.
    const ids = Array.from({ length: 20_000 }, () => uuidv7(1_800_000_000_000));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ulid()).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('stays within 25 KB minified and gzipped, with no eval', async () => {
    const files = await buildSdk();
    for (const file of [files.esm, files.iife]) {
      const source = readFileSync(file);
      const gzipped = gzipSync(source, { level: 9 }).length;
      expect(gzipped, file).toBeLessThanOrEqual(SIZE_BUDGET_BYTES);
      expect(source.toString()).not.toMatch(/\beval\(|new Function\(/);
    }
  });
});
