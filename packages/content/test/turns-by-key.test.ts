import { describe, expect, it } from 'vitest';
import { TurnsByKey } from '../src/turns-by-key';

describe('TurnsByKey', () => {
  it('runs the jobs of a key one at a time in the order asked, those of other keys meanwhile, and goes on after a failure', async () => {
    const turns = new TurnsByKey();
    const log: string[] = [];
    let release = () => undefined as void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = turns.run('a', async () => {
      log.push('a1 start');
      await held;
      log.push('a1 end');
      throw new Error('a1 failed');
    });
    const second = turns.run('a', async () => void log.push('a2'));
    await turns.run('b', async () => void log.push('b1'));
    expect(log).toEqual(['a1 start', 'b1']);
    await new Promise((resolve) => setImmediate(resolve));
    // Key b is done and forgotten; a still waits on its first job.
    expect(turns.busyKeys).toBe(1);
    release();
    await expect(first).rejects.toThrow('a1 failed');
    await second;
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(turns.busyKeys).toBe(0);
  });
});
