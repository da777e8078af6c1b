import { ManualClock } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { hashUserId, UnfinishedErasures, type DeletionJob } from '../src';

function job(tenantSeq: number, userId: string, status: DeletionJob['status'] = 'pending'): DeletionJob {
  return { tenantSeq, userHash: hashUserId(userId), status } as DeletionJob;
}

describe('users being erased, from the unfinished deletion jobs', () => {
  it('drops exactly the users of unfinished jobs, per tenant and case-sensitively', async () => {
    const erasures = new UnfinishedErasures({ listUnfinished: async () => [job(1, 'Alice'), job(2, 'bob', 'running')] });
    expect(await erasures.check(1, 'Alice')).toBe(true);
    expect(await erasures.check(2, 'bob')).toBe(true);
    expect(await erasures.check(1, 'alice')).toBe(false);
    expect(await erasures.check(2, 'Alice')).toBe(false);
    expect(await erasures.check(1, 'bob')).toBe(false);
  });

  it('reads the jobs once per max age, and sees a new job after it', async () => {
    const clock = new ManualClock();
    const jobs: DeletionJob[] = [];
    let reads = 0;
    const erasures = new UnfinishedErasures({ listUnfinished: async () => (reads++, [...jobs]) }, 1_000, clock);
    expect(await Promise.all([erasures.check(1, 'u'), erasures.check(1, 'v')])).toEqual([false, false]);
    expect(reads).toBe(1);
    jobs.push(job(1, 'u'));
    clock.advance(999);
    expect(await erasures.check(1, 'u')).toBe(false);
    expect(reads).toBe(1);
    clock.advance(1);
    expect(await erasures.check(1, 'u')).toBe(true);
    expect(reads).toBe(2);
    jobs.length = 0;
    clock.advance(1_000);
    expect(await erasures.check(1, 'u')).toBe(false);
  });
});
