import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { ChDatabase, ClickHouseAnalyticsStore, openEmbeddedStorage, type ContentStore, type OverlayRecord, type Storage } from '@svc/storage';
import type { EventRow } from '../../storage/src/records';
import { dataset, HOUR, SETTINGS, START } from '../../storage/test/analytics-dataset';
import { nextSecond } from '../../storage/test/clickhouse-analytics-checks';
import { insertEvents } from '../../storage/test/clickhouse-events';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from '../../storage/test/clickhouse-server';
import { PollCatalogue } from '../src/poll-catalogue';

const poll = (tenantSeq: number, id: string, options = ['Reds', 'Blues']): OverlayRecord => ({
  tenantSeq, broadcastId: 'b1', id, type: 'poll', content: { type: 'poll', question: 'Who wins?', options }, active: true, createdAt: START, updatedAt: START, shownAt: START,
});

/** The content store, each read of every poll taken at once and handed over when let go. */
function heldReads(store: ContentStore) {
  const reads: Array<() => void> = [];
  return {
    reads,
    /** Waits until a read is held (and a moment more, for any other to show). */
    held: async () => {
      while (!reads.length) await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setTimeout(resolve, 20));
    },
    /** Lets the oldest held read go, once it has taken the polls. */
    release: async () => {
      while (!reads.length) await new Promise((resolve) => setTimeout(resolve, 5));
      reads.shift()!();
    },
    store: {
      listPolls: async () => {
        const polls = await store.listPolls();
        await new Promise<void>((resolve) => reads.push(resolve));
        return polls;
      },
    },
  };
}

describe('the poll catalogue', () => {
  let storage: Storage;
  beforeAll(async () => {
    storage = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-poll-catalogue-')));
    await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
  });
  afterAll(() => storage?.close());

  it('reads every poll again only when its last read began before the time asked for', async () => {
    const clock = new ManualClock(START);
    const { store, reads, held, release } = heldReads(storage.content);
    const catalogue = new PollCatalogue(clock);
    const loading = catalogue.load(store);
    await release();
    await loading;
    // Created behind its back (a notice lost on the way).
    await storage.content.createOverlay(poll(1, 'missed'));
    expect(catalogue.find(1, 'missed')).toBeUndefined();

    // Its read began at START: it holds every poll that existed then.
    clock.advance(60_000);
    await catalogue.readAgain(START);
    expect(reads).toHaveLength(0);
    // A later time: one read, shared by every ask made while it runs.
    const asks = [catalogue.readAgain(START + 30_000), catalogue.readAgain(START + 60_000)];
    await held();
    expect(reads).toHaveLength(1);
    await release();
    await Promise.all(asks);
    expect(catalogue.find(1, 'missed')?.options).toEqual(['Reds', 'Blues']);
    // A time still to come is read as now.
    await catalogue.readAgain(START + 3_600_000);
    expect(reads).toHaveLength(0);
  });

  it('keeps the changes it is told of while it reads every poll, and a read asked for meanwhile begins after', async () => {
    const clock = new ManualClock(START);
    const { store, reads, held, release } = heldReads(storage.content);
    const catalogue = new PollCatalogue(clock);
    const loading = catalogue.load(store);
    while (!reads.length) await new Promise((resolve) => setTimeout(resolve, 5));
    // Told of changes while the read (which took the polls before them) is under way.
    const late = poll(1, 'late', ['Yes', 'No']);
    await storage.content.createOverlay(late);
    catalogue.remember(late);
    await storage.content.deleteOverlay(1, 'missed');
    catalogue.forget(1, 'missed');
    await release();
    await loading;
    expect(catalogue.find(1, 'late')?.options).toEqual(['Yes', 'No']);
    expect(catalogue.find(1, 'missed')).toBeUndefined();

    clock.advance(1_000);
    const first = catalogue.reload(store);
    const second = catalogue.reload(store);
    await held();
    expect(reads).toHaveLength(1);
    // Stored after the first read took the polls, never told: only the second read finds it.
    await storage.content.createOverlay(poll(1, 'untold'));
    await release();
    await first;
    expect(catalogue.find(1, 'untold')).toBeUndefined();
    await held();
    expect(reads).toHaveLength(1);
    await release();
    await second;
    expect(catalogue.find(1, 'untold')?.options).toEqual(['Reds', 'Blues']);
    expect(catalogue.find(1, 'late')?.options).toEqual(['Yes', 'No']);
    expect(catalogue.find(1, 'missed')).toBeUndefined();
  });
});

describe.skipIf(!clickhouseAvailable())('votes on a poll this node was not told of, in the dashboard on ClickHouse', () => {
  let server: ClickHouseServer;
  beforeAll(async () => {
    server = await startClickHouse();
  }, 60_000);
  afterAll(() => server?.stop());

  it('are counted in the hours this node derives: it reads the polls again first, and only when votes name one it does not know', async () => {
    const storage = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-poll-catalogue-ch-')));
    const db = await ChDatabase.open(server.url, await server.createDatabase());
    try {
      const tenant = await storage.meta.createTenant({ id: 't', name: 'T', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
      let reads = 0;
      const counted = { listPolls: () => ((reads += 1), storage.content.listPolls()) };
      const catalogue = await new PollCatalogue().load(counted);
      // Created on another node; the notice never came.
      await storage.content.createOverlay(poll(tenant.seq, 'final'));
      const base = dataset(1, tenant.seq)[0]!;
      const now = Date.now();
      const vote = (n: number, pollId: string, receivedAtMs = now): EventRow => ({
        ...base, eventId: `10000000-0000-7000-8000-00000000000${n}`, event: 'poll.voted', sessionId: `svc_${n}`, userId: null, broadcastId: 'b1',
        timestampMs: START + HOUR + n, receivedAtMs, data: JSON.stringify({ pollId, optionSelected: n % 2 ? 'Blues' : 'Reds', optionIndex: n % 2 }),
      });
      await insertEvents(db, [vote(1, 'final'), vote(2, 'final'), vote(3, 'final')]);
      const store = new ClickHouseAnalyticsStore(db, catalogue, { quietSeconds: 0, settleSeconds: 1 });
      await nextSecond();
      expect(await store.deriveHours()).toBe(1);
      expect(reads).toBe(2);
      const [results] = await store.pollResults({ tenantSeq: tenant.seq });
      expect(results?.options.map((o) => o.votes)).toEqual([1, 2]);

      // Votes on a poll nobody created, received long enough before the catalogue's last read
      // (clocks of nodes may differ by a minute): no read again.
      await insertEvents(db, [vote(4, 'made-up', now - 120_000), vote(5, 'final')]);
      await nextSecond();
      expect(await store.deriveHours()).toBe(1);
      expect(reads).toBe(2);
      expect((await store.pollResults({ tenantSeq: tenant.seq }))[0]?.options.map((o) => o.votes)).toEqual([1, 3]);
    } finally {
      await Promise.all([storage.close(), db.close()]);
    }
  }, 120_000);
});
