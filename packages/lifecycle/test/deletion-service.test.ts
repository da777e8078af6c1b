import { describe, expect, it } from 'vitest';
import { ManualClock, SvcError } from '@svc/protocol';
import type { DeletionJob, DeletionStore } from '@svc/storage';
import { DeletionService } from '../src/deletion-service';

/** Jobs in memory; `execute` fails with what `failure` returns, if anything. */
class FakeDeletionStore implements DeletionStore {
  readonly jobs = new Map<string, DeletionJob>();
  failure: (() => Error) | null = null;
  markFailedError: Error | null = null;
  /** The clear userId each execute call was given, by job id. */
  readonly clearIds = new Map<string, string | undefined>();

  async create(job: DeletionJob) { this.jobs.set(job.id, { ...job }); }
  async get(_tenantSeq: number, id: string) { return this.jobs.get(id) ?? null; }
  async findUnfinished(tenantSeq: number, userHash: string) {
    return [...this.jobs.values()].find((j) => j.tenantSeq === tenantSeq && j.userHash === userHash && (j.status === 'pending' || j.status === 'running')) ?? null;
  }
  async listUnfinished() { return [...this.jobs.values()].filter((j) => j.status === 'pending' || j.status === 'running'); }
  async execute(job: DeletionJob, completedAt: number, userId?: string) {
    this.clearIds.set(job.id, userId);
    if (this.failure) throw this.failure();
    const done = { ...job, status: 'completed' as const, completedAt, deletedEvents: 1, deletedRejects: 0 };
    this.jobs.set(job.id, done);
    return done;
  }
  async markFailed(id: string, error: string) {
    if (this.markFailedError) throw this.markFailedError;
    this.jobs.set(id, { ...this.jobs.get(id)!, status: 'failed', error });
  }
  async oldestUnpurged() {
    const waiting = [...this.jobs.values()].filter((j) => j.status === 'completed' && j.purgedAt === null).map((j) => j.completedAt!);
    return waiting.length ? Math.min(...waiting) : null;
  }
  async purge(now: () => number) {
    const waiting = [...this.jobs.values()].filter((j) => j.status === 'completed' && j.purgedAt === null);
    for (const job of waiting) this.jobs.set(job.id, { ...job, purgedAt: now() });
    return waiting.length;
  }
}

const tenant = { seq: 1 } as Parameters<DeletionService['request']>[0];

describe('DeletionService', () => {
  it('runs a job it was asked for with the userId in clear, and a job found at start with the hash only', async () => {
    const store = new FakeDeletionStore();
    const asked = await new DeletionService(store, new ManualClock(0)).request(tenant, 'user-1');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(store.clearIds.get(asked.id)).toBe('user-1');

    const resumed: DeletionJob = { ...asked, id: 'del_resumed', status: 'pending', completedAt: null };
    await store.create(resumed);
    const restarted = new DeletionService(store, new ManualClock(0));
    restarted.start();
    await restarted.idle();
    expect(store.jobs.get('del_resumed')!.status).toBe('completed');
    expect(store.clearIds.has('del_resumed')).toBe(true);
    expect(store.clearIds.get('del_resumed')).toBeUndefined();
  });

  it('leaves a job the disk refused pending and completes it on the next run', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new SvcError('storage_unavailable', 'disk full');
    const service = new DeletionService(store, new ManualClock(0));
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
    const service = new DeletionService(store, new ManualClock(0), undefined, undefined, 30);
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
    const service = new DeletionService(store, new ManualClock(0));
    const job = await service.request(tenant, 'user-1');
    await service.idle();
    expect(store.jobs.get(job.id)).toMatchObject({ status: 'failed', error: 'Binder Error: no such column' });
  });

  it('reports a failure to record the failure instead of leaving it unhandled', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new Error('boom');
    store.markFailedError = new Error('cannot write either');
    const errors: unknown[] = [];
    const service = new DeletionService(store, new ManualClock(0), undefined, (error) => errors.push(error));
    await service.request(tenant, 'user-1');
    await service.idle();
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom', 'cannot write either']);
  });

  it('reports the failures of jobs to the error handler given at start, with the job', async () => {
    const store = new FakeDeletionStore();
    store.failure = () => new Error('boom');
    const reported: Array<[string, string | undefined]> = [];
    const service = new DeletionService(store, new ManualClock(0));
    service.start((error, job) => reported.push([(error as Error).message, job?.id]));
    const job = await service.request(tenant, 'user-1');
    await service.idle();
    expect(reported).toEqual([['boom', job.id]]);
    expect(store.jobs.get(job.id)!.status).toBe('failed');
  });
});
