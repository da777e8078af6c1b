import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExportTextFormat, ExportTextOptions, StoredEvent } from '@svc/protocol';
import { openEmbeddedStorage, type EventFilter, type EventRow, type QuarantineRow } from '../src';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { ClickHouseEventStore } from '../src/clickhouse/clickhouse-event-store';
import { toInsertRow } from '../src/clickhouse/event-sql';
import { CH_MIGRATIONS } from '../src/clickhouse/ch-migrations';
import { insertEarlierEvents } from './clickhouse-events';
import { storedEvent } from '../../export/test/arbitraries';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';
import { contractRow, storeContract } from './store-contract';
import { storedEventRow } from './stored-event-row';

const available = clickhouseAvailable();

const row = contractRow;

const toRow = storedEventRow;

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = '';
  for await (const chunk of chunks) all += chunk;
  return all;
}

describe.runIf(available)('ClickHouse event store', () => {
  let server: ClickHouseServer;
  const folders: string[] = [];
  const opened: { close(): Promise<void> }[] = [];
  let databases = 0;
  beforeAll(async () => {
    server = await startClickHouse();
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((o) => o.close()));
    await server?.stop();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  const openDb = async (): Promise<ChDatabase> => {
    const db = await ChDatabase.open(server.url, `svc_events_${++databases}`);
    opened.push(db);
    return db;
  };

  storeContract('ClickHouse', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'svc-ch-meta-'));
    folders.push(folder);
    const embedded = await openEmbeddedStorage(folder);
    const db = await openDb();
    return {
      meta: embedded.meta,
      events: new ClickHouseEventStore(db),
      close: async () => {
        await Promise.all([embedded.close(), db.close()]);
      },
    };
  });

  it('reads every event once while unmerged copies of it are stored', async () => {
    const db = await openDb();
    const events = new ClickHouseEventStore(db);
    const rows = Array.from({ length: 6 }, (_, i) => row(1, { timestampMs: Date.UTC(2026, 0, 1) + (i % 3) * 1000, event: i % 2 ? 'order.completed' : 'poll.voted' }));
    // Three inserts make three parts: the copies stay apart until a merge.
    for (let copy = 0; copy < 3; copy++) await db.insert('events', rows.map(toInsertRow));
    expect(await db.query('SELECT count() AS n FROM events')).toEqual([{ n: '18' }]);
    expect(await events.countEvents({ tenantSeq: 1 })).toBe(6);
    expect(await events.countEvents({ tenantSeq: 1, events: ['order.completed'] })).toBe(3);
    const page = await events.queryEvents({ tenantSeq: 1 }, { limit: 4 });
    expect(new Set(page.map((e) => e.eventId)).size).toBe(4);
    const lines = (await text(events.streamEventText({ tenantSeq: 1 }, 'ndjson'))).trimEnd().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { eventId: string }).eventId).sort()).toEqual(rows.map((r) => r.eventId).sort());
  });

  it('recognises ids stored by another store instance (another node), inside a batch of new ones', async () => {
    const db = await openDb();
    const old = row(1);
    await new ClickHouseEventStore(db).commit({ events: [old], rejects: [] });
    const fresh = row(1, { timestampMs: old.timestampMs + 5 });
    const otherTenant = row(2, { eventId: old.eventId });
    const outcome = await new ClickHouseEventStore(db).commit({ events: [{ ...old, eventId: old.eventId.toUpperCase() }, fresh, otherTenant], rejects: [] });
    expect([...outcome.inserted].sort()).toEqual([`1:${fresh.eventId}`, `2:${old.eventId}`].sort());
    expect(await db.query('SELECT count() AS n FROM events')).toEqual([{ n: '3' }]);
  });

  it('looks up ids with a tab, a line break, a backslash or a colon as they are (a list sent as a table of the request)', async () => {
    const db = await openDb();
    const odd = ['a\tb', 'c\nd', 'e\\f', 'g:h', 'i\\tj', 'k\rl'];
    await db.insert('event_ids', odd.map((id, i) => ({ tenant_seq: 3, event_id: id, timestamp_ms: i, user_id: null })));
    const keys = [...odd, 'a', 'atb', 'c\\nd'].map((id) => `3:${id}`);
    expect([...(await new ClickHouseEventStore(db).storedKeys(keys))].sort()).toEqual(odd.map((id) => `3:${id}`).sort());
  });

  it('recognises a copy sent again whose clock-corrected time moved by a few seconds (another sentAt)', async () => {
    const db = await openDb();
    const first = row(1);
    await new ClickHouseEventStore(db).commit({ events: [first], rejects: [] });
    // The retry's transit time differed: its corrected timestamp is 3.5 s later.
    const again = { ...first, timestampMs: first.timestampMs + 3_500, receivedAtMs: first.receivedAtMs + 60_000 };
    const outcome = await new ClickHouseEventStore(db).commit({ events: [again], rejects: [] });
    expect([...outcome.inserted]).toEqual([]);
    expect(await db.query('SELECT count() AS n FROM events')).toEqual([{ n: '1' }]);
  });

  it('recognises a copy sent again whose clock-corrected time moved by an hour, beside new events of that hour', async () => {
    const db = await openDb();
    const first = row(1);
    await new ClickHouseEventStore(db).commit({ events: [first], rejects: [] });
    const later = { ...first, timestampMs: first.timestampMs + 3_600_000 };
    const outcome = await new ClickHouseEventStore(db).commit({ events: [later, row(1, { timestampMs: later.timestampMs + 1 })], rejects: [] });
    expect(outcome.inserted.size).toBe(1);
    expect(await db.query('SELECT count() AS n FROM events')).toEqual([{ n: '2' }]);
  });

  it('upgrades a database of the first schema: the ids of the events stored before are found', async () => {
    const name = `svc_events_${++databases}`;
    const old = await ChDatabase.open(server.url, name, { migrations: CH_MIGRATIONS.filter((m) => m.version === 1) });
    const before = row(1);
    await insertEarlierEvents(old, [before]);
    await old.close();
    const db = await ChDatabase.open(server.url, name);
    opened.push(db);
    expect(await db.query('SELECT tenant_seq, event_id FROM event_ids')).toEqual([{ tenant_seq: 1, event_id: before.eventId.toLowerCase() }]);
    const outcome = await new ClickHouseEventStore(db).commit({ events: [{ ...before, timestampMs: before.timestampMs + 86_400_000 }], rejects: [] });
    expect(outcome.inserted.size).toBe(0);
    expect(await db.query('SELECT count() AS n FROM events')).toEqual([{ n: '1' }]);
  });

  it('recognises stored ids scattered over years, in more time windows than one statement takes', async () => {
    const db = await openDb();
    // 300 times a week apart (300 windows per tenant, joined to 200), for two tenants.
    const scattered = Array.from({ length: 600 }, (_, i) => row(1 + (i % 2), { timestampMs: Date.UTC(2020, 0, 1) + Math.floor(i / 2) * 3_600_000 * 24 * 7 }));
    await new ClickHouseEventStore(db).commit({ events: scattered.filter((_, i) => i % 3 === 0), rejects: [] });
    const outcome = await new ClickHouseEventStore(db).commit({ events: scattered, rejects: [] });
    expect(outcome.inserted.size).toBe(400);
    expect(await db.query('SELECT count() AS n FROM events')).toEqual([{ n: '600' }]);
  });

  it('stores the rejects of a batch stored again once', async () => {
    const db = await openDb();
    const reject: QuarantineRow = {
      tenantSeq: 1, id: randomUUID(), receivedAtMs: Date.UTC(2026, 0, 2), code: 'missing_field', detail: 'd', errors: '[]',
      eventName: null, userId: null, payload: '{}',
    };
    await new ClickHouseEventStore(db).commit({ events: [], rejects: [reject] });
    await new ClickHouseEventStore(db).commit({ events: [], rejects: [reject] });
    expect(await db.query('SELECT count() AS n FROM rejected_events')).toEqual([{ n: '1' }]);
    const events = new ClickHouseEventStore(db);
    expect(await events.purgeRejectedBefore(reject.receivedAtMs)).toBe(0);
    expect(await events.purgeRejectedBefore(reject.receivedAtMs + 1)).toBe(1);
    expect(await events.listRejected(1, { limit: 10 })).toEqual([]);
  });

  it('drops whole months of a tenant past retention and deletes its older rows in shared months', async () => {
    const db = await openDb();
    const events = new ClickHouseEventStore(db);
    const at = (month: number, day = 10) => Date.UTC(2026, month, day);
    await events.commit({
      events: [
        row(1, { timestampMs: at(0) }), row(1, { timestampMs: at(0, 20) }), // January: tenant 1 only
        row(1, { timestampMs: at(1) }), row(2, { timestampMs: at(1) }), // February: shared
        row(1, { timestampMs: at(2, 5) }), row(1, { timestampMs: at(2, 25) }), // March: the cutoff's month
      ],
      rejects: [],
    });
    // A copy of a January event in a part of its own counts once.
    const [january] = await events.queryEvents({ tenantSeq: 1 }, { limit: 1 });
    await db.insert('events', [toInsertRow(row(1, { eventId: january!.eventId, timestampMs: at(0) }))]);
    expect(await events.purgeEventsBefore(1, at(2, 15))).toBe(4);
    const partitions = await db.query<{ partition: string }>(
      "SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active ORDER BY partition",
    );
    expect(partitions.map((p) => p.partition)).toEqual(['202602', '202603']);
    // The ids of the purged events go with them.
    expect(await db.query('SELECT tenant_seq, timestamp_ms FROM event_ids FINAL ORDER BY tenant_seq, timestamp_ms')).toEqual([
      { tenant_seq: 1, timestamp_ms: String(at(2, 25)) }, { tenant_seq: 2, timestamp_ms: String(at(1)) },
    ]);
    expect(await events.countEvents({ tenantSeq: 1 })).toBe(1);
    expect(await events.countEvents({ tenantSeq: 2 })).toBe(1);
    expect(await events.purgeEventsBefore(1, at(2, 15))).toBe(0);
  });

  it('fails a commit with storage_unavailable while the server is down, and stores the batch once when it is retried', async () => {
    const db = await openDb();
    const events = new ClickHouseEventStore(db);
    const batch = { events: [row(1), row(1)], rejects: [] };
    await server.kill();
    try {
      await expect(events.commit(batch)).rejects.toMatchObject({ code: 'storage_unavailable' });
    } finally {
      await server.restart();
    }
    expect((await events.commit(batch)).inserted.size).toBe(2);
    expect(await events.countEvents({ tenantSeq: 1 })).toBe(2);
  });

  it('keeps working after an export whose reader stopped early', async () => {
    const db = await openDb();
    const events = new ClickHouseEventStore(db);
    await events.commit({ events: Array.from({ length: 3_000 }, (_, i) => row(1, { timestampMs: Date.UTC(2026, 0, 1) + i })), rejects: [] });
    for await (const chunk of events.streamEventText({ tenantSeq: 1 }, 'csv')) {
      expect(chunk.length).toBeGreaterThan(0);
      break;
    }
    expect(await events.countEvents({ tenantSeq: 1 })).toBe(3_000);
  });

  describe('export text byte for byte as the embedded backend writes it', () => {
    /** Identifiers as validation lets them in: printable (strings inside `data` may hold anything). */
    const printable = (t: string) => t.replace(/[\u0000-\u001f\u007f]/g, '·');
    const asIngested = storedEvent.map(
      (e): StoredEvent => ({
        ...e,
        userId: e.userId === null ? null : printable(e.userId),
        sessionId: printable(e.sessionId),
        broadcastId: printable(e.broadcastId),
        orderId: e.orderId === null ? null : printable(e.orderId),
        sponsorId: e.sponsorId === null ? null : printable(e.sponsorId),
      }),
    );
    const formats: [ExportTextFormat, ExportTextOptions][] = [['ndjson', {}], ['csv', {}], ['csv', { neutraliseFormulas: true }]];

    it('for any events, every format, with copies unmerged and filters applied', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'svc-ch-duck-'));
      folders.push(folder);
      const embedded = await openEmbeddedStorage(folder);
      opened.push(embedded);
      const db = await openDb();
      // Small windows: a fixture spanning decades crosses many of them.
      const clickhouse = new ClickHouseEventStore(db, 4);
      let tenantSeq = 0;
      await fc.assert(
        fc.asyncProperty(fc.uniqueArray(asIngested, { selector: (e) => e.eventId, maxLength: 25 }), async (stored) => {
          tenantSeq++;
          const rows = stored.map((e) => toRow(tenantSeq, e));
          await embedded.events.commit({ events: rows, rejects: [] });
          await clickhouse.commit({ events: rows, rejects: [] });
          // Copies of some events in a part of their own.
          await db.insert('events', rows.filter((_, i) => i % 3 === 0).map(toInsertRow));
          const filters: EventFilter[] = [{ tenantSeq }];
          if (stored[0]) {
            const first = stored[0];
            filters.push({ tenantSeq, fromMs: Date.parse(first.timestamp), events: [first.event] });
            if (first.userId !== null) filters.push({ tenantSeq, userId: first.userId });
            if (first.sponsorId !== null) filters.push({ tenantSeq, sponsorId: first.sponsorId });
          }
          for (const filter of filters) {
            for (const [format, options] of formats) {
              const expected = await text(embedded.events.streamEventText(filter, format, options));
              expect(await text(clickhouse.streamEventText(filter, format, options))).toBe(expected);
            }
          }
        }),
        { numRuns: 15 },
      );
      // Each insert also fills event_ids: one more part per month the fixture spans (decades).
    }, 120_000);

    it('for poison text in every field', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'svc-ch-duck-'));
      folders.push(folder);
      const embedded = await openEmbeddedStorage(folder);
      opened.push(embedded);
      const clickhouse = new ClickHouseEventStore(await openDb());
      const poison = ['=1+1', '-2', '@x', '\t', '\r', '"q"', 'a,b', 'line\nbreak', '\u2028', '😀', 'é', "'; DROP TABLE events; --", '\\', '\\u0000', '\ufeffbom'];
      const rows = poison.map((p, i) =>
        row(7, {
          timestampMs: Date.UTC(2026, 0, 1) + i,
          event: i % 2 ? 'order.completed' : 'poll.voted',
          userId: p,
          sessionId: p,
          broadcastId: p,
          orderId: i % 2 ? p : null,
          sponsorId: i % 4 === 1 ? p : null,
          total: i % 2 ? i * 1.1 : null,
          items: i % 2 ? JSON.stringify([{ productId: p, name: p, quantity: 1, unitPrice: 0.1, currency: 'EUR' }]) : null,
          data: JSON.stringify({ [p]: p, nested: { text: `${p}\u0000` } }),
        }),
      );
      await embedded.events.commit({ events: rows, rejects: [] });
      await clickhouse.commit({ events: rows, rejects: [] });
      for (const [format, options] of formats) {
        const expected = await text(embedded.events.streamEventText({ tenantSeq: 7 }, format, options));
        expect(expected.length).toBeGreaterThan(0);
        expect(await text(clickhouse.streamEventText({ tenantSeq: 7 }, format, options))).toBe(expected);
      }
      const sponsor = await text(clickhouse.streamEventText({ tenantSeq: 7, sponsorId: poison[1]! }, 'ndjson'));
      expect(sponsor).toBe(await text(embedded.events.streamEventText({ tenantSeq: 7, sponsorId: poison[1]! }, 'ndjson')));
    });
  });
});
