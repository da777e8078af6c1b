import { describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import type { DeletionStore } from '@svc/storage';
import { ErasurePurger } from '../src/erasure-purger';

/** Completion times of jobs waiting for a purge; `purge` serves them all (or fails while `failures` > 0). */
class WaitingJobs {
  completedAt: number[] = [];
  purges: number[] = [];
  failures = 0;
  store = {
    oldestUnpurged: async () => (this.completedAt.length ? Math.min(...this.completedAt) : null),
    purge: async (now: () => number) => {
      if (this.failures > 0) {
        this.failures--;
        throw new Error('disk full');
      }
      const served = this.completedAt.length;
      this.completedAt = [];
      if (served) this.purges.push(now());
      return served;
    },
  } as unknown as DeletionStore;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ErasurePurger', () => {
  it('purges the jobs completed together in one rewrite, when the oldest has waited half the bound', async () => {
    const clock = new ManualClock(10_000);
    const jobs = new WaitingJobs();
    const purger = new ErasurePurger(jobs.store, 200, clock);
    jobs.completedAt.push(10_000);
    await purger.schedule();
    jobs.completedAt.push(10_050);
    await purger.schedule();
    await sleep(40);
    expect(jobs.purges).toEqual([]);
    await sleep(400);
    expect(jobs.purges).toHaveLength(1);
    expect(jobs.completedAt).toEqual([]);
    await purger.stop();
  });

  it('tries again after a purge the disk refused, and reports the failure', async () => {
    const jobs = new WaitingJobs();
    const failures: unknown[] = [];
    const purger = new ErasurePurger(jobs.store, 40, new ManualClock(0), { purged: () => {}, failed: (error) => failures.push(error) });
    jobs.failures = 1;
    jobs.completedAt.push(0);
    await purger.start();
    await sleep(400);
    expect(failures).toHaveLength(1);
    expect(jobs.purges).toHaveLength(1);
    await purger.stop();
  });

  it('plans nothing when no job waits, and nothing after it is stopped', async () => {
    const jobs = new WaitingJobs();
    const purger = new ErasurePurger(jobs.store, 0, new ManualClock(0));
    await purger.schedule();
    await purger.stop();
    jobs.completedAt.push(0);
    await purger.schedule();
    await sleep(20);
    expect(jobs.purges).toEqual([]);
  });
});
