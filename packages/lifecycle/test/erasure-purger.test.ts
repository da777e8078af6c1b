import { describe, expect, it } from 'vitest';
import { LocalBus, ManualClock } from '@svc/protocol';
import { ErasurePurger } from '../src/erasure-purger';

/**
 * Completion times of jobs waiting for a purge; a rewrite serves those listed before it (or
 * fails while `failures` > 0).
 */
class WaitingJobs {
  completedAt: number[] = [];
  purges: number[] = [];
  failures = 0;
  store = {
    oldestUnpurged: async () => (this.completedAt.length ? Math.min(...this.completedAt) : null),
    listUnpurged: async () => this.completedAt.map(String),
    markPurged: async (ids: string[], purgedAt: number) => {
      this.completedAt = this.completedAt.filter((at) => !ids.includes(String(at)));
      this.purges.push(purgedAt);
    },
  };
  /** Completions that happen while the rewrite runs. */
  completingDuringRewrite: number[] = [];
  erasure = {
    rewriteErased: async () => {
      this.completedAt.push(...this.completingDuringRewrite.splice(0));
      if (this.failures > 0) {
        this.failures--;
        throw new Error('disk full');
      }
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ErasurePurger', () => {
  it('purges the jobs completed together in one rewrite, when the oldest has waited half the bound', async () => {
    const clock = new ManualClock(10_000);
    const jobs = new WaitingJobs();
    const purger = new ErasurePurger(jobs.store, jobs.erasure, 200, clock);
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
    const purger = new ErasurePurger(jobs.store, jobs.erasure, 40, new ManualClock(0), { purged: () => {}, failed: (error) => failures.push(error) });
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
    const purger = new ErasurePurger(jobs.store, jobs.erasure, 0, new ManualClock(0));
    await purger.schedule();
    await purger.stop();
    jobs.completedAt.push(0);
    await purger.schedule();
    await sleep(20);
    expect(jobs.purges).toEqual([]);
  });

  it('marks purged only the jobs completed before the rewrite began, and plans the next one for the others', async () => {
    const jobs = new WaitingJobs();
    const purged: number[] = [];
    const purger = new ErasurePurger(jobs.store, jobs.erasure, 1_000, new ManualClock(7), { purged: (n) => purged.push(n), failed: () => {} });
    jobs.completedAt.push(1, 2);
    jobs.completingDuringRewrite.push(5);
    expect(await purger.runOnce()).toBe(2);
    expect(purged).toEqual([2]);
    expect(jobs.completedAt).toEqual([5]);
    expect(await purger.runOnce()).toBe(1);
    expect(jobs.purges).toEqual([7, 7]);
    await purger.stop();
  });

  it('plans the purge of a job the bus announces erased', async () => {
    const jobs = new WaitingJobs();
    const bus = new LocalBus();
    const purger = new ErasurePurger(jobs.store, jobs.erasure, 40, new ManualClock(0), undefined, bus);
    jobs.completedAt.push(0);
    await bus.publish('user.erased', { jobId: 'del_1', tenantSeq: 1, userHash: 'h', userId: null });
    await sleep(200);
    expect(jobs.purges).toHaveLength(1);
    await purger.stop();
  });
});
