import { describe, expect, it, vi } from 'vitest';
import { LocalBus, ManualClock, SvcError, type ErasureNotice } from '@svc/protocol';
import type { DeletionJob, DeletionJobStore, ErasedCounts, UserErasureStore } from '@svc/storage';
import { DeletionService } from '../src/deletion-service';

/** Jobs and their leases in memory; `erase` fails with what `failure` returns, if anything. */
class FakeDeletionStore implements DeletionJobStore, UserErasureStore {
  readonly jobs = new Map<string, DeletionJob>();
  readonly leases = new Map<string, { nodeId: string; expiresAt: number }>();
  failure: (() => Error) | null = null;
  markFailedError: Error | null = null;
  /** The clear userId each erase call was given, by job id. */
  readonly clearIds = new Map<string, string | undefined>();
  /** Job ids in the order they were erased (a job erased twice appears twice). */
  readonly erased: string[] = [];
  /** The step at which the node running a job dies: that call never returns. */
  dieAt: 'erase' | 'markCompleted' | null = null;

  async create(job: DeletionJob) { this.jobs.set(job.id, { ...job }); }
  async get(_tenantSeq: number, id: string) { return this.jobs.get(id) ?? null; }
  async findUnfinished(tenantSeq: number, userHash: string) {
    return [...this.jobs.values()].find((j) => j.tenantSeq === tenantSeq && j.userHash === userHash && (j.status === 'pending' || j.status === 'running')) ?? null;
  }
  async listUnfinished() { return [...this.jobs.values()].filter((j) => j.status === 'pending' || j.status === 'running'); }
  async listJobs(tenantSeq: number) { return [...this.jobs.values()].filter((j) => j.tenantSeq === tenantSeq); }
  async claimNext(nodeId: string, now: number, leaseMs: number) {
    const free = (await this.listUnfinished()).find((j) => j.status === 'pending' || (this.leases.get(j.id)?.expiresAt ?? now) <= now);
    if (!free) return null;
    const claimed = { ...free, status: 'running' as const };
    this.jobs.set(free.id, claimed);
    this.leases.set(free.id, { nodeId, expiresAt: now + leaseMs });
    return claimed;
  }
  async renewLease(id: string, nodeId: string, now: number, leaseMs: number) {
    if (this.leases.get(id)?.nodeId !== nodeId) return false;
    this.leases.set(id, { nodeId, expiresAt: now + leaseMs });
    return true;
  }
  async releaseLease(id: string, nodeId: string) {
    if (this.leases.get(id)?.nodeId !== nodeId) return;
    this.leases.delete(id);
    this.jobs.set(id, { ...this.jobs.get(id)!, status: 'pending' });
  }
  async erase(job: Pick<DeletionJob, 'tenantSeq' | 'userHash'>, userId?: string): Promise<ErasedCounts> {
    const id = [...this.jobs.values()].find((j) => j.userHash === job.userHash && (j.status === 'pending' || j.status === 'running'))!.id;
    this.clearIds.set(id, userId);
    if (this.failure) throw this.failure();
    this.erased.push(id);
    if (this.dieAt === 'erase') await new Promise(() => {});
    return { deletedEvents: this.erased.filter((e) => e === id).length === 1 ? 1 : 0, deletedRejects: 0 };
  }
  async rewriteErased() {}
  async markCompleted(id: string, completedAt: number, counts: ErasedCounts) {
    if (this.dieAt === 'markCompleted') await new Promise(() => {});
    this.leases.delete(id);
    const done = { ...this.jobs.get(id)!, status: 'completed' as const, completedAt, ...counts };
    this.jobs.set(id, done);
    return done;
  }
  async markFailed(id: string, error: string) {
    if (this.markFailedError) throw this.markFailedError;
    this.leases.delete(id);
    this.jobs.set(id, { ...this.jobs.get(id)!, status: 'failed', error });
  }
  async oldestUnpurged() { return null; }
  async listUnpurged() { return []; }
  async markPurged() {}
}

const tenant = { seq: 1 } as Parameters<DeletionService['request']>[0];

describe('DeletionService', () => {
  it('runs a job it was asked for with the userId in clear, and a job found at start with the hash only', async () => {
    const store = new FakeDeletionStore();
    const asked = await new DeletionService(store, store, new ManualClock(0)).request(tenant, 'user-1');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(store.clearIds.get(asked.id)).toBe('user-1');

    const resumed: DeletionJob = { ...asked, id: 'del_resumed', status: 'pending', completedAt: null };
    await store.create(resumed);
    const restarted = new DeletionService(store, store, new ManualClock(0));
    restarted.start();
    await restarted.idle();
    expect(store.jobs.get('del_resumed')!.status).toBe('completed');
    expect(store.clearIds.has('del_resumed')).toBe(true);
    expect(store.clearIds.get('del_resumed')).toBeUndefined();
  });

  it('leaves a job the disk refused pending and completes it on the next run', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new SvcError('storage_unavailable', 'disk full');
    const service = new DeletionService(store, store, new ManualClock(0));
    const job = await service.request(tenant, 'user-1');
    await service.idle();
    expect(store.jobs.get(job.id)!.status).toBe('pending');

    store.failure = null;
    service.start();
    await service.idle();
    expect(store.jobs.get(job.id)!.status).toBe('completed');
  });

  it('tries a job the disk refused again by itself after the retry delay', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new SvcError('storage_unavailable', 'disk full');
    const service = new DeletionService(store, store, new ManualClock(0), undefined, undefined, 30);
    const job = await service.request(tenant, 'user-1');
    await service.idle();
    expect(store.jobs.get(job.id)!.status).toBe('pending');
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(store.jobs.get(job.id)!.status).toBe('pending'); // still refused: tried again, still pending
    store.failure = null;
    for (let waited = 0; store.jobs.get(job.id)!.status !== 'completed' && waited < 2_000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(store.jobs.get(job.id)!.status).toBe('completed');
    // The userId given with the request is still used by the retried run.
    expect(store.clearIds.get(job.id)).toBe('user-1');
    await service.stop();
  });

  it('marks a job failed for any other error', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new Error('Binder Error: no such column');
    const service = new DeletionService(store, store, new ManualClock(0));
    const job = await service.request(tenant, 'user-1');
    await service.idle();
    expect(store.jobs.get(job.id)).toMatchObject({ status: 'failed', error: 'Binder Error: no such column' });
  });

  it('reports a failure to record the failure instead of leaving it unhandled', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new Error('boom');
    store.markFailedError = new Error('cannot write either');
    const errors: unknown[] = [];
    const service = new DeletionService(store, store, new ManualClock(0), undefined, (error) => errors.push(error));
    await service.request(tenant, 'user-1');
    await service.idle();
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom', 'cannot write either']);
  });

  it('reports the failures of jobs to the error handler given at start, with the job', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new Error('boom');
    const reported: Array<[string, string | undefined]> = [];
    const service = new DeletionService(store, store, new ManualClock(0));
    service.start((error, job) => reported.push([(error as Error).message, job?.id]));
    const job = await service.request(tenant, 'user-1');
    await service.idle();
    expect(reported).toEqual([['boom', job.id]]);
    expect(store.jobs.get(job.id)!.status).toBe('failed');
  });

  for (const step of ['erase', 'markCompleted'] as const) {
    it(`lets another node resume a job whose node died in ${step}, once the lease has expired, erasing again`, async () => {
      const store = new FakeDeletionStore();
      store.dieAt = step;
      const leaseMs = 1_000;
      const dying = new DeletionService(store, store, new ManualClock(0), undefined, undefined, undefined, { nodeId: 'a', leaseMs });
      const job = await dying.request(tenant, 'user-1');
      for (let waited = 0; store.jobs.get(job.id)!.status !== 'running' && waited < 1_000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(store.erased).toEqual([job.id]);
      expect(store.jobs.get(job.id)!.status).toBe('running');
      store.dieAt = null;

      const clock = new ManualClock(leaseMs - 1);
      const other = new DeletionService(store, store, clock, undefined, undefined, undefined, { nodeId: 'b', leaseMs });
      other.start();
      await other.idle();
      // Still leased to the node that died.
      expect(store.jobs.get(job.id)!.status).toBe('running');
      expect(store.erased).toEqual([job.id]);

      clock.advance(1);
      other.start();
      await other.idle();
      // Erased again (deleting nothing more, here 0) and completed by the other node, from the hash.
      expect(store.erased).toEqual([job.id, job.id]);
      expect(store.jobs.get(job.id)).toMatchObject({ status: 'completed', completedAt: leaseMs, deletedEvents: 0 });
      expect(store.clearIds.get(job.id)).toBeUndefined();
      await other.stop();
    });
  }

  it('gives a job the disk refused back, so that any node may claim it', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new SvcError('storage_unavailable', 'disk full');
    const service = new DeletionService(store, store, new ManualClock(0), undefined, undefined, undefined, { nodeId: 'a' });
    const job = await service.request(tenant, 'user-1');
    await service.idle();
    expect(store.jobs.get(job.id)!.status).toBe('pending');
    expect(store.leases.has(job.id)).toBe(false);
    await service.stop();
  });

  it('announces a job on the bus before the erasure, waiting for its subscribers, and after it', async () => {
    const store = new FakeDeletionStore();
    const bus = new LocalBus();
    const steps: string[] = [];
    let release!: () => void;
    bus.subscribe('user.erasing', async (notice) => {
      steps.push(`erasing ${notice.userId} ${store.erased.length}`);
      await new Promise<void>((resolve) => (release = resolve));
      steps.push('erasing done');
    });
    const erased: ErasureNotice[] = [];
    bus.subscribe('user.erased', (notice) => void erased.push(notice));
    const service = new DeletionService(store, store, new ManualClock(0), undefined, undefined, undefined, undefined, bus);
    const job = await service.request(tenant, 'user-1');
    await vi.waitFor(() => expect(steps).toEqual(['erasing user-1 0']));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(store.erased).toEqual([]);
    release();
    await service.idle();
    expect(steps).toEqual(['erasing user-1 0', 'erasing done']);
    expect(store.erased).toEqual([job.id]);
    expect(erased).toEqual([{ jobId: job.id, tenantSeq: 1, userHash: job.userHash, userId: null }]);
  });

  it('fails a job whose erasing subscriber failed, erasing nothing, and reports a failed erased subscriber without failing the job', async () => {
    const store = new FakeDeletionStore();
    const bus = new LocalBus();
    const errors: unknown[] = [];
    const end = bus.subscribe('user.erasing', () => {
      throw new Error('sessions not forgotten');
    });
    const service = new DeletionService(store, store, new ManualClock(0), undefined, (error) => errors.push(error), undefined, undefined, bus);
    const failed = await service.request(tenant, 'user-1');
    await service.idle();
    expect(store.jobs.get(failed.id)).toMatchObject({ status: 'failed', error: 'sessions not forgotten' });
    expect(store.erased).toEqual([]);

    end();
    bus.subscribe('user.erased', async () => {
      throw new Error('purge not planned');
    });
    const done = await service.request(tenant, 'user-2');
    await service.idle();
    expect(store.jobs.get(done.id)!.status).toBe('completed');
    expect(errors.map((error) => (error as Error).message)).toEqual(['sessions not forgotten', 'purge not planned']);
  });
});
