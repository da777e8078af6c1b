import { describe, expect, it } from 'vitest';
import { hashUserId, type DeletionJob, type DeletionJobStore } from '../src';

/** What the DeletionJobStore contract needs of a backend: `Storage` has it, and so has a metadata-only one. */
export interface DeletionJobBackend {
  deletions: DeletionJobStore;
  close(): Promise<void>;
}

const LEASE_MS = 1_000;
const none = { deletedEvents: 0, deletedRejects: 0 };

/** A pending job of `userId` in tenant 1, requested at `requestedAt`. */
export function pendingJob(id: string, userId: string, requestedAt: number, tenantSeq = 1): DeletionJob {
  return {
    id, tenantSeq, userHash: hashUserId(userId), status: 'pending', requestedAt,
    completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null,
  };
}

/** Behaviour every DeletionJobStore must show; `open` gives an empty database each time. */
export function deletionJobStoreContract(name: string, open: () => Promise<DeletionJobBackend>): void {
  describe(`${name} deletion job store contract`, () => {
    it('keeps a job and gives it back only within its tenant', async () => {
      const { deletions, close } = await open();
      const job = pendingJob('del_1', 'u1', 1_700_000_000_123);
      await deletions.create(job);
      expect(await deletions.get(1, 'del_1')).toEqual(job);
      expect(await deletions.get(2, 'del_1')).toBeNull();
      expect(await deletions.get(1, 'del_2')).toBeNull();
      await close();
    });

    it("finds a user's unfinished job, oldest first, never a completed or failed one nor another tenant's", async () => {
      const { deletions, close } = await open();
      await deletions.create(pendingJob('del_done', 'u1', 1));
      await deletions.markCompleted('del_done', 2, none);
      await deletions.create(pendingJob('del_failed', 'u1', 3));
      await deletions.markFailed('del_failed', 'boom');
      await deletions.create(pendingJob('del_other_tenant', 'u1', 4, 2));
      expect(await deletions.findUnfinished(1, hashUserId('u1'))).toBeNull();
      await deletions.create(pendingJob('del_late', 'u1', 20));
      await deletions.create(pendingJob('del_early', 'u1', 10));
      expect((await deletions.findUnfinished(1, hashUserId('u1')))?.id).toBe('del_early');
      expect((await deletions.findUnfinished(2, hashUserId('u1')))?.id).toBe('del_other_tenant');
      expect(await deletions.findUnfinished(1, hashUserId('u2'))).toBeNull();
      await close();
    });

    it('lists unfinished jobs oldest first, ids in byte order at equal times', async () => {
      const { deletions, close } = await open();
      for (const [id, at] of [['del_b', 5], ['del_a', 5], ['del_B', 5], ['del_0', 9], ['del_z', 1]] as const) {
        await deletions.create(pendingJob(id, id, at));
      }
      await deletions.markCompleted('del_z', 10, none);
      expect((await deletions.listUnfinished()).map((j) => j.id)).toEqual(['del_B', 'del_a', 'del_b', 'del_0']);
      await close();
    });

    it("lists every job of a tenant whatever its status, oldest first, and no other tenant's", async () => {
      const { deletions, close } = await open();
      await deletions.create(pendingJob('del_b', 'u1', 10));
      await deletions.create(pendingJob('del_a', 'u2', 10));
      await deletions.create(pendingJob('del_first', 'u3', 5));
      await deletions.create(pendingJob('del_other', 'u1', 1, 2));
      const completed = await deletions.markCompleted('del_first', 7, { deletedEvents: 3, deletedRejects: 1 });
      await deletions.markFailed('del_b', 'boom');
      const listed = await deletions.listJobs(1);
      expect(listed.map((j) => [j.id, j.status])).toEqual([['del_first', 'completed'], ['del_a', 'pending'], ['del_b', 'failed']]);
      expect(listed[0]).toEqual(completed);
      expect(listed[2]).toEqual(await deletions.get(1, 'del_b'));
      expect((await deletions.listJobs(2)).map((j) => j.id)).toEqual(['del_other']);
      expect(await deletions.listJobs(3)).toEqual([]);
      await close();
    });

    it('marks a job completed with its counts, and a second completion keeps the first', async () => {
      const { deletions, close } = await open();
      await deletions.create(pendingJob('del_1', 'u1', 1));
      await deletions.markFailed('del_1', 'earlier try');
      const done = await deletions.markCompleted('del_1', 50, { deletedEvents: 7, deletedRejects: 2 });
      expect(done).toEqual({ ...pendingJob('del_1', 'u1', 1), status: 'completed', completedAt: 50, deletedEvents: 7, deletedRejects: 2 });
      // A node that erased the same job again after a crash finds it completed.
      expect(await deletions.markCompleted('del_1', 90, none)).toEqual(done);
      expect(await deletions.get(1, 'del_1')).toEqual(done);
      await close();
    });

    it('marks a job failed with its error cut to 500 characters', async () => {
      const { deletions, close } = await open();
      await deletions.create(pendingJob('del_1', 'u1', 1));
      await deletions.markFailed('del_1', 'x'.repeat(600));
      expect(await deletions.get(1, 'del_1')).toMatchObject({ status: 'failed', error: 'x'.repeat(500), completedAt: null });
      await close();
    });

    it('lists the completed jobs waiting for their purge and marks them purged', async () => {
      const { deletions, close } = await open();
      expect(await deletions.oldestUnpurged()).toBeNull();
      for (const [id, completedAt] of [['del_b', 30], ['del_a', 20], ['del_c', 40]] as const) {
        await deletions.create(pendingJob(id, id, 1));
        await deletions.markCompleted(id, completedAt, none);
      }
      await deletions.create(pendingJob('del_pending', 'p', 1));
      expect(await deletions.oldestUnpurged()).toBe(20);
      expect(await deletions.listUnpurged()).toEqual(['del_a', 'del_b', 'del_c']);
      await deletions.markPurged(['del_a', 'del_b'], 60);
      await deletions.markPurged([], 70);
      expect(await deletions.get(1, 'del_a')).toMatchObject({ completedAt: 20, purgedAt: 60 });
      expect(await deletions.oldestUnpurged()).toBe(40);
      expect(await deletions.listUnpurged()).toEqual(['del_c']);
      await close();
    });

    it('claims the oldest pending job for a node and marks it running, then the next, then none', async () => {
      const { deletions, close } = await open();
      expect(await deletions.claimNext('a', 0, LEASE_MS)).toBeNull();
      await deletions.create(pendingJob('del_2', 'u2', 20));
      await deletions.create(pendingJob('del_1', 'u1', 10));
      const first = await deletions.claimNext('a', 100, LEASE_MS);
      expect(first).toEqual({ ...pendingJob('del_1', 'u1', 10), status: 'running' });
      expect((await deletions.get(1, 'del_1'))?.status).toBe('running');
      // Still unfinished: a repeated request for the user finds it.
      expect((await deletions.findUnfinished(1, hashUserId('u1')))?.id).toBe('del_1');
      expect((await deletions.claimNext('b', 100, LEASE_MS))?.id).toBe('del_2');
      expect(await deletions.claimNext('c', 100, LEASE_MS)).toBeNull();
      await close();
    });

    it('claims a running job only once its lease has expired, and then the first node holds it no more', async () => {
      const { deletions, close } = await open();
      await deletions.create(pendingJob('del_1', 'u1', 1));
      await deletions.claimNext('a', 1_000, LEASE_MS);
      expect(await deletions.claimNext('b', 1_999, LEASE_MS)).toBeNull();
      expect((await deletions.claimNext('b', 2_000, LEASE_MS))?.id).toBe('del_1');
      expect(await deletions.renewLease('del_1', 'a', 2_100, LEASE_MS)).toBe(false);
      expect(await deletions.renewLease('del_1', 'b', 2_100, LEASE_MS)).toBe(true);
      await close();
    });

    it('keeps a renewed lease from other nodes until the renewed expiry', async () => {
      const { deletions, close } = await open();
      await deletions.create(pendingJob('del_1', 'u1', 1));
      await deletions.claimNext('a', 0, LEASE_MS);
      expect(await deletions.renewLease('del_1', 'a', 900, LEASE_MS)).toBe(true);
      expect(await deletions.claimNext('b', 1_899, LEASE_MS)).toBeNull();
      expect((await deletions.claimNext('b', 1_900, LEASE_MS))?.id).toBe('del_1');
      await close();
    });

    it('makes a released job pending for any node at once; a release by another node does nothing', async () => {
      const { deletions, close } = await open();
      await deletions.create(pendingJob('del_1', 'u1', 1));
      await deletions.claimNext('a', 0, LEASE_MS);
      await deletions.releaseLease('del_1', 'b');
      expect(await deletions.claimNext('b', 10, LEASE_MS)).toBeNull();
      await deletions.releaseLease('del_1', 'a');
      expect((await deletions.get(1, 'del_1'))?.status).toBe('pending');
      expect((await deletions.claimNext('b', 10, LEASE_MS))?.id).toBe('del_1');
      await close();
    });

    it('never claims a completed or failed job, nor renews or releases one', async () => {
      const { deletions, close } = await open();
      await deletions.create(pendingJob('del_done', 'u1', 1));
      await deletions.create(pendingJob('del_failed', 'u2', 2));
      await deletions.claimNext('a', 0, LEASE_MS);
      await deletions.claimNext('a', 0, LEASE_MS);
      await deletions.markCompleted('del_done', 5, none);
      await deletions.markFailed('del_failed', 'boom');
      expect(await deletions.renewLease('del_done', 'a', 10, LEASE_MS)).toBe(false);
      await deletions.releaseLease('del_failed', 'a');
      // Long after every lease would have expired.
      expect(await deletions.claimNext('b', 1_000_000, LEASE_MS)).toBeNull();
      expect((await deletions.get(1, 'del_done'))?.status).toBe('completed');
      expect((await deletions.get(1, 'del_failed'))?.status).toBe('failed');
      await close();
    });

    it('gives claims made at the same moment different jobs', async () => {
      const { deletions, close } = await open();
      for (let i = 0; i < 6; i++) await deletions.create(pendingJob(`del_${i}`, `u${i}`, i));
      const claimed = await Promise.all(Array.from({ length: 8 }, (_, i) => deletions.claimNext(`n${i}`, 100, LEASE_MS)));
      const ids = claimed.filter((job) => job !== null).map((job) => job.id);
      expect(ids.sort()).toEqual(['del_0', 'del_1', 'del_2', 'del_3', 'del_4', 'del_5']);
      await close();
    });
  });
}
