import { describe, expect, it, vi } from 'vitest';
import { LocalBus, ManualClock, type BusTopic, type BusTopics } from '@svc/protocol';
import { eventKey, type CommitBatch, type EventRow, type EventStore, type MetaStore, type Tenant } from '@svc/storage';
import { validEvent } from '../../../apps/server/test/events-fixture';
import { TEST_SETTINGS } from '../../storage/test/test-settings';
import type { GroupCommitter } from '../src/group-committer';
import { IngestService } from '../src/ingest-service';
import { announceStored } from '../src/stored-event-notices';

const NOW = Date.UTC(2026, 10, 1, 12);
const TENANT: Tenant = { seq: 3, id: 'demo', name: 'Demo', createdAt: 0, retentionMonths: 13, settings: TEST_SETTINGS };

const row = (event: string, eventId: string, data = '{}'): EventRow => ({
  tenantSeq: TENANT.seq, eventId, event, userId: 'u1', sessionId: `svc_${eventId}`, broadcastId: 'b1', campaignId: 1,
  timestampMs: NOW - 1, receivedAtMs: NOW, country: 'DE', orderId: null, sponsorId: null, total: null, items: null, data,
});

/** Everything published on `topics`, in order. */
function record(bus: LocalBus, topics: BusTopic[]): Array<[BusTopic, unknown]> {
  const seen: Array<[BusTopic, unknown]> = [];
  for (const topic of topics) bus.subscribe(topic, (payload) => void seen.push([topic, payload]));
  return seen;
}

/** A commit queue that stores everything, each commit when the test releases it. */
class HeldCommitter {
  private readonly held: Array<() => void> = [];
  submit(batch: CommitBatch): Promise<Set<string>> {
    return new Promise((resolve) => this.held.push(() => resolve(new Set(batch.events.map((e) => eventKey(e.tenantSeq, e.eventId))))));
  }
  async settled(): Promise<void> {}
  release(): void {
    for (const release of this.held.splice(0)) release();
  }
  get waiting(): number {
    return this.held.length;
  }
}

function ingestService(bus: LocalBus, committer: HeldCommitter, campaign: { id: number }, commitMakesReadable = true): IngestService {
  const meta = { resolveBroadcasts: async (_seq: number, wanted: Array<{ broadcastId: string }>) => new Map(wanted.map((b) => [b.broadcastId, campaign.id])) };
  return new IngestService(meta as unknown as MetaStore, null as unknown as EventStore, committer as unknown as GroupCommitter, new ManualClock(NOW), undefined, undefined, undefined, bus, commitMakesReadable);
}

describe('ingest on the bus', () => {
  it('announces what a commit stored: the tenant, the votes as plain data, and only viewers\' own broadcast.left', () => {
    const bus = new LocalBus();
    const seen = record(bus, ['events.stored', 'poll.voted', 'session.left']);
    const vote = row('poll.voted', 'v1', '{"pollId":"p1","optionIndex":0}');
    announceStored(bus, TENANT.seq, 'client', [row('broadcast.joined', 'j1'), vote, row('broadcast.left', 'l1')], true);
    announceStored(bus, TENANT.seq, 'server', [row('broadcast.left', 'l2')], false);
    expect(seen).toEqual([
      ['events.stored', { tenantSeq: TENANT.seq }],
      ['poll.voted', { tenantSeq: TENANT.seq, votes: [{ eventId: 'v1', sessionId: 'svc_v1', userId: 'u1', broadcastId: 'b1', timestampMs: NOW - 1, receivedAtMs: NOW, data: vote.data }] }],
      ['session.left', { tenantSeq: TENANT.seq, sessionIds: ['svc_l1'] }],
    ]);
  });

  it('announces the contest entries a commit stored, by any source, as plain data', () => {
    const bus = new LocalBus();
    const seen = record(bus, ['contest.entered']);
    const entry = row('contest.entered', 'c1', '{"contestId":"ct1","title":"Win"}');
    announceStored(bus, TENANT.seq, 'client', [row('broadcast.joined', 'j1'), entry], true);
    announceStored(bus, TENANT.seq, 'server', [{ ...entry, eventId: 'c2', userId: null, sessionId: 'svc_c2' }], false);
    expect(seen).toEqual([
      ['contest.entered', { tenantSeq: TENANT.seq, entries: [{ eventId: 'c1', sessionId: 'svc_c1', userId: 'u1', broadcastId: 'b1', data: entry.data }] }],
      ['contest.entered', { tenantSeq: TENANT.seq, entries: [{ eventId: 'c2', sessionId: 'svc_c2', userId: null, broadcastId: 'b1', data: entry.data }] }],
    ]);
  });

  it('publishes after the commit, and events.stored only where its commit makes the events readable', async () => {
    for (const readable of [true, false]) {
      const bus = new LocalBus();
      const seen = record(bus, ['events.stored', 'poll.voted', 'session.left']);
      const committer = new HeldCommitter();
      const ingest = ingestService(bus, committer, { id: 1 }, readable);
      const at = new Date(NOW - 1_000);
      const body = { events: [validEvent('poll.voted', at), validEvent('broadcast.left', at)] };
      const call = ingest.ingest({ tenant: TENANT, source: 'client', country: null, body, bodyBytes: 1_000 });
      await vi.waitFor(() => expect(committer.waiting).toBe(1));
      expect(seen).toEqual([]);
      committer.release();
      expect((await call).accepted).toBe(2);
      expect(seen.map(([topic]) => topic)).toEqual(readable ? ['events.stored', 'poll.voted', 'session.left'] : ['poll.voted', 'session.left']);
    }
  });

  it('reads a broadcast\'s campaign again once the bus announces the broadcast registered anew', async () => {
    const bus = new LocalBus();
    const campaign = { id: 1 };
    const ingest = ingestService(bus, new HeldCommitter(), campaign);
    expect(await ingest.campaignOf(TENANT, 'b1')).toBe(1);
    campaign.id = 2;
    expect(await ingest.campaignOf(TENANT, 'b1')).toBe(1);
    await bus.publish('broadcast.registered', { tenantSeq: TENANT.seq, broadcastId: 'b1' });
    expect(await ingest.campaignOf(TENANT, 'b1')).toBe(2);
  });

  it('holds an erasure announced on the bus until the events sent before it are committed', async () => {
    const bus = new LocalBus();
    const committer = new HeldCommitter();
    const ingest = ingestService(bus, committer, { id: 1 });
    const call = ingest.ingest({ tenant: TENANT, source: 'client', country: null, body: validEvent('broadcast.joined', new Date(NOW - 1_000)), bodyBytes: 500 });
    await vi.waitFor(() => expect(committer.waiting).toBe(1));
    let erasing = false;
    const notice: BusTopics['user.erasing'] = { jobId: 'del_1', tenantSeq: TENANT.seq, userHash: 'h', userId: 'user-42' };
    const published = bus.publish('user.erasing', notice).then(() => (erasing = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(erasing).toBe(false);
    committer.release();
    await published;
    expect((await call).accepted).toBe(1);
  });
});
