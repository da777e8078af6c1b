import { ManualClock } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { hashUserId, UnfinishedErasures, type DeletionJob } from '../src';

function job(tenantSeq: number, userId: string, status: DeletionJob['status'] = 'pending', requestedAt = 1_000): DeletionJob {
  return { tenantSeq, userHash: hashUserId(userId), status, requestedAt } as DeletionJob;
}

describe('users being erased, from the unfinished deletion jobs', () => {
  it('names exactly the users of unfinished jobs, per tenant and case-sensitively, with the newest request time', async () => {
    const erasures = new UnfinishedErasures({ listUnfinished: async () => [job(1, 'Alice', 'pending', 500), job(1, 'Alice', 'pending', 700), job(2, 'bob', 'running')] });
    expect(await erasures.since(1, 'Alice')).toBe(700);
    expect(await erasures.since(2, 'bob')).toBe(1_000);
    expect(await erasures.since(1, 'alice')).toBeNull();
    expect(await erasures.since(2, 'Alice')).toBeNull();
    expect(await erasures.since(1, 'bob')).toBeNull();
  });

  it('reads the jobs once per max age, and sees a new job after it', async () => {
    const clock = new ManualClock();
    const jobs: DeletionJob[] = [];
    let reads = 0;
    const erasures = new UnfinishedErasures({ listUnfinished: async () => (reads++, [...jobs]) }, 1_000, clock);
    expect(await Promise.all([erasures.since(1, 'u'), erasures.since(1, 'v')])).toEqual([null, null]);
    expect(reads).toBe(1);
    jobs.push(job(1, 'u'));
    clock.advance(999);
    expect(await erasures.since(1, 'u')).toBeNull();
    expect(reads).toBe(1);
    clock.advance(1);
    expect(await erasures.since(1, 'u')).toBe(1_000);
    expect(reads).toBe(2);
    jobs.length = 0;
    clock.advance(1_000);
    expect(await erasures.since(1, 'u')).toBeNull();
  });
});
