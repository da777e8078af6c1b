import { describe, expect, it } from 'vitest';
import { BatchedLookup } from '../src/batched-lookup';

describe('BatchedLookup', () => {
  it('asks once for the keys asked in one turn, and again when a batch is full', async () => {
    const calls: string[][] = [];
    const lookup = new BatchedLookup<number>(async (keys) => {
      calls.push(keys);
      return new Map(keys.filter((k) => k !== 'missing').map((k) => [k, k.length]));
    }, 3);
    const answers = await Promise.all(['a', 'bb', 'ccc', 'dddd', 'missing', 'a'].map((k) => lookup.get(k)));
    expect(answers).toEqual([1, 2, 3, 4, undefined, 1]);
    expect(calls).toEqual([['a', 'bb', 'ccc'], ['dddd', 'missing', 'a']]);
  });

  it('fails every question of a batch whose lookup failed', async () => {
    const lookup = new BatchedLookup<number>(async () => Promise.reject(new Error('down')));
    const answers = await Promise.allSettled([lookup.get('a'), lookup.get('b')]);
    expect(answers.map((a) => a.status)).toEqual(['rejected', 'rejected']);
  });
});
