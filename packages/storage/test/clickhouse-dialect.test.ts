import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DuckDbContentStore, DuckDbDatabase, DuckDbEventStore, hashUserId, openEmbeddedStorage, type EventRow, type QuarantineRow } from '../src';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { ClickHouseErasureStore } from '../src/clickhouse/clickhouse-erasure-store';
import { ClickHouseEventStore } from '../src/clickhouse/clickhouse-event-store';
import { ClickHouseInteractionStore } from '../src/clickhouse/clickhouse-interaction-store';
import { toInsertRow } from '../src/clickhouse/event-sql';
import { chdbAvailable, chdbConnection } from './chdb-engine';
import { storeContract } from './store-contract';

/**
 * The ClickHouse backend's statements on the current engine (what users run in production),
 * in process through npm chdb: the suites that run on the 18.16 server (see
 * clickhouse-event-store.test.ts, clickhouse-erasure.test.ts) run here too, in short.
 */
const available = chdbAvailable();

const row = (tenantSeq: number, overrides: Partial<EventRow> = {}): EventRow => ({
  tenantSeq, eventId: randomUUID(), event: 'poll.voted', userId: 'u1', sessionId: 'svc_a', broadcastId: 'b1', campaignId: 1,
  timestampMs: Date.UTC(2026, 2, 1, 12), receivedAtMs: Date.UTC(2026, 2, 1, 12, 0, 1), country: 'DE', orderId: null, sponsorId: null,
  total: null, items: null, data: '{"pollId":"p1","optionIndex":1}', ...overrides,
});
const reject = (tenantSeq: number, userId: string | null, receivedAtMs = Date.UTC(2026, 2, 1)): QuarantineRow => ({
  tenantSeq, id: randomUUID(), receivedAtMs, code: 'pii_detected', detail: 'd', errors: '[]', eventName: 'poll.voted', userId, payload: '{}',
});

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = '';
  for await (const chunk of chunks) all += chunk;
  return all;
}

describe.runIf(available)('ClickHouse backend on the current engine (chdb)', () => {
  const folders: string[] = [];
  const folder = () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-chdb-'));
    folders.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });
  /** A fresh engine: the previous test closed its connection, which emptied the shared `:memory:` one. */
  const openDb = () => ChDatabase.open('http://chdb.invalid', 'default', { connection: chdbConnection() });

  storeContract('ClickHouse (chdb)', async () => {
    const embedded = await openEmbeddedStorage(folder());
    const db = await openDb();
    return {
      meta: embedded.meta,
      events: new ClickHouseEventStore(db),
      close: async () => {
        await Promise.all([embedded.close(), db.close()]);
      },
    };
  });

  it('stores, reads, exports and purges as on 18.16, with unmerged copies', async () => {
    const db = await openDb();
    const duck = await openEmbeddedStorage(folder());
    try {
      const events = new ClickHouseEventStore(db, 2);
      const poison = ['=1+1', 'a,b', 'q"q', 'line\nbreak', '\u2028', '😀', "'; --", '\\'];
      const rows = poison.map((p, i) =>
        row(1, {
          timestampMs: Date.UTC(2026, i % 3, 10) + i, event: i % 2 ? 'order.completed' : 'poll.voted', userId: p, sessionId: p,
          orderId: i % 2 ? p : null, total: i % 2 ? i * 1.1 : null, sponsorId: i === 1 ? 'sp' : null,
          data: JSON.stringify({ [p]: p, sponsorId: i === 2 ? 'sp' : undefined }),
        }),
      );
      const outcome = await events.commit({ events: rows, rejects: [reject(1, 'x', Date.UTC(2026, 0, 1)), reject(1, null)] });
      expect(outcome.inserted.size).toBe(rows.length);
      expect((await events.commit({ events: rows.slice(0, 2), rejects: [] })).inserted.size).toBe(0);
      await db.insert('events', rows.slice(0, 3).map(toInsertRow));
      await duck.events.commit({ events: rows, rejects: [] });
      expect(await events.countEvents({ tenantSeq: 1 })).toBe(rows.length);
      expect((await events.queryEvents({ tenantSeq: 1 }, { limit: 100 })).map((e) => e.eventId)).toEqual(
        (await duck.events.queryEvents({ tenantSeq: 1 }, { limit: 100 })).map((e) => e.eventId),
      );
      for (const filter of [{ tenantSeq: 1 }, { tenantSeq: 1, sponsorId: 'sp' }, { tenantSeq: 1, events: ['order.completed'], fromMs: Date.UTC(2026, 1, 1) }]) {
        for (const format of ['ndjson', 'csv'] as const) {
          expect(await text(events.streamEventText(filter, format, { neutraliseFormulas: true }))).toBe(await text(duck.events.streamEventText(filter, format, { neutraliseFormulas: true })));
        }
      }
      expect((await events.listRejected(1, { limit: 1 })).length).toBe(1);
      expect(await events.purgeRejectedBefore(Date.UTC(2026, 1, 1))).toBe(1);
      expect(await events.purgeEventsBefore(1, Date.UTC(2026, 1, 15))).toBe(6);
      expect(await events.countEvents({ tenantSeq: 1 })).toBe(2);
    } finally {
      await Promise.all([db.close(), duck.close()]);
    }
  });

  it('erases a user and lists interactions as on 18.16', async () => {
    const db = await openDb();
    const duck = await DuckDbDatabase.open(folder());
    try {
      const events = new ClickHouseEventStore(db);
      const rows = [row(1, { userId: 'gone' }), row(1, { userId: null, sessionId: 'svc_anon' }), row(1, { userId: 'kept', event: 'contest.entered', data: '{"contestId":"c1"}' })];
      await events.commit({ events: rows, rejects: [reject(1, 'gone')] });
      await new DuckDbEventStore(duck).commit({ events: rows, rejects: [] });
      expect(await new ClickHouseInteractionStore(db).listInteractions(1, 'b1')).toEqual(await new DuckDbContentStore(duck).listInteractions(1, 'b1'));
      const erasure = new ClickHouseErasureStore(db, { partRemovalWaitMs: 0 });
      expect(await erasure.erase({ tenantSeq: 1, userHash: hashUserId('gone') })).toEqual({ deletedEvents: 1, deletedRejects: 1 });
      expect(await erasure.erase({ tenantSeq: 1, userHash: hashUserId('kept') }, 'kept')).toEqual({ deletedEvents: 1, deletedRejects: 0 });
      expect(await events.countEvents({ tenantSeq: 1 })).toBe(1);
      // Its statements run; the engine keeps replaced parts for minutes, so the wait may time out.
      await erasure.rewriteErased().catch((error: unknown) => expect(error).toMatchObject({ code: 'storage_unavailable' }));
    } finally {
      await Promise.all([db.close(), duck.close()]);
    }
  });
});
