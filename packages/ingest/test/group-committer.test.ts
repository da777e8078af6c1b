import { describe, expect, it } from 'vitest';
import type { CommitBatch, CommitOutcome, EventRow, EventStore } from '@svc/storage';
import { eventKey } from '@svc/storage';
import { GroupCommitter, MAX_EVENTS_PER_COMMIT } from '../src/group-committer';

/** An in-memory store that records each commit it was asked for. */
class RecordingStore implements Pick<EventStore, 'commit'> {
  readonly commits: CommitBatch[] = [];
  readonly keys = new Set<string>();
  failNext = false;

  async commit(batch: CommitBatch): Promise<CommitOutcome> {
    this.commits.push(batch);
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk on fire');
    }
    const inserted = new Set<string>();
    for (const e of batch.events) {
      const key = eventKey(e.tenantSeq, e.eventId);
      if (!this.keys.has(key)) inserted.add(key);
      this.keys.add(key);
    }
    return { inserted };
  }
}

const row = (eventId: string): EventRow => ({
  tenantSeq: 1, eventId, event: 'broadcast.joined', userId: null, sessionId: 'svc_x', broadcastId: 'b', campaignId: 1,
  timestampMs: 0, receivedAtMs: 0, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}',
});

describe('group commit', () => {
  it('writes submissions of one turn in one commit and tells each caller what it inserted', async () => {
    const store = new RecordingStore();
    const committer = new GroupCommitter(store as unknown as EventStore);
    const [a, b] = await Promise.all([
      committer.submit({ events: [row('a1'), row('shared')], rejects: [] }),
      committer.submit({ events: [row('b1'), row('shared')], rejects: [] }),
    ]);
    expect(store.commits).toHaveLength(1);
    expect(store.commits[0]!.events.map((e) => e.eventId)).toEqual(['a1', 'shared', 'b1']);
    expect([...a].sort()).toEqual(['1:a1', '1:shared']);
    expect([...b]).toEqual(['1:b1']);
  });

  it('commits each submission on its own, at once, when grouping is off, and waits for them all on close', async () => {
    const store = new RecordingStore();
    const committer = new GroupCommitter(store as unknown as EventStore, undefined, { group: false });
    const a = committer.submit({ events: [row('a1'), row('a2')], rejects: [] });
    // Handed to the store at once: one commit per submission, each with exactly its own events.
    expect(store.commits.map((c) => c.events.map((e) => e.eventId))).toEqual([['a1', 'a2']]);
    const b = committer.submit({ events: [row('b1')], rejects: [] });
    await committer.close();
    expect(store.commits.map((c) => c.events.map((e) => e.eventId))).toEqual([['a1', 'a2'], ['b1']]);
    expect([...(await a)].sort()).toEqual(['1:a1', '1:a2']);
    expect([...(await b)]).toEqual(['1:b1']);
    await expect(committer.submit({ events: [row('late')], rejects: [] })).rejects.toThrow(/shutting down/);
  });

  it('splits very large queues into several commits', async () => {
    const store = new RecordingStore();
    const committer = new GroupCommitter(store as unknown as EventStore);
    const big = (prefix: string) => Array.from({ length: MAX_EVENTS_PER_COMMIT / 2 + 1 }, (_, i) => row(`${prefix}${i}`));
    await Promise.all([committer.submit({ events: big('x'), rejects: [] }), committer.submit({ events: big('y'), rejects: [] })]);
    expect(store.commits).toHaveLength(2);
  });

  it('fails the callers of a failed commit and goes on with the next ones', async () => {
    const store = new RecordingStore();
    const committer = new GroupCommitter(store as unknown as EventStore);
    store.failNext = true;
    await expect(committer.submit({ events: [row('lost')], rejects: [] })).rejects.toThrow('disk on fire');
    await expect(committer.submit({ events: [row('kept')], rejects: [] })).resolves.toEqual(new Set(['1:kept']));
  });

  it('commits what is queued on close and refuses new work afterwards', async () => {
    const store = new RecordingStore();
    const committer = new GroupCommitter(store as unknown as EventStore);
    const pending = committer.submit({ events: [row('late')], rejects: [] });
    await committer.close();
    await expect(pending).resolves.toEqual(new Set(['1:late']));
    await expect(committer.submit({ events: [row('after')], rejects: [] })).rejects.toMatchObject({ code: 'not_ready' });
  });
});
