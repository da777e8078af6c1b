import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDbContentStore, DuckDbDatabase, DuckDbEventStore, hashUserId, type EventRow, type QuarantineRow } from '../src';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { CH_MIGRATIONS } from '../src/clickhouse/ch-migrations';
import { ClickHouseErasureStore } from '../src/clickhouse/clickhouse-erasure-store';
import { ClickHouseEventStore } from '../src/clickhouse/clickhouse-event-store';
import { ClickHouseInteractionStore } from '../src/clickhouse/clickhouse-interaction-store';
import { toInsertRow } from '../src/clickhouse/event-sql';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';

const available = clickhouseAvailable();

const event = (tenantSeq: number, userId: string | null, overrides: Partial<EventRow> = {}): EventRow => ({
  tenantSeq, eventId: randomUUID(), event: 'poll.voted', userId, sessionId: 'svc_s', broadcastId: 'b1', campaignId: 1,
  timestampMs: Date.UTC(2026, 0, 1), receivedAtMs: Date.UTC(2026, 0, 1), country: null, orderId: null, sponsorId: null,
  total: null, items: null, data: '{"pollId":"p1","optionIndex":0}', ...overrides,
});
const reject = (tenantSeq: number, userId: string | null): QuarantineRow => ({
  tenantSeq, id: randomUUID(), receivedAtMs: Date.UTC(2026, 0, 1), code: 'pii_detected', detail: 'd', errors: '[]',
  eventName: 'poll.voted', userId, payload: '{}',
});

describe.runIf(available)('ClickHouse erasure and interactions', () => {
  let server: ClickHouseServer;
  let databases = 0;
  const folders: string[] = [];
  beforeAll(async () => {
    server = await startClickHouse();
  });
  afterAll(async () => {
    await server?.stop();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  it("deletes the user's events and rejects, counting copies once, and nothing more when run again, by userId or by hash", async () => {
    const db = await ChDatabase.open(server.url, `svc_erase_${++databases}`);
    const events = new ClickHouseEventStore(db);
    const erasure = new ClickHouseErasureStore(db);
    const gone = [event(1, 'gone'), event(1, 'gone', { timestampMs: Date.UTC(2026, 1, 1) })];
    await events.commit({ events: [...gone, event(1, 'kept'), event(2, 'gone'), event(1, null)], rejects: [reject(1, 'gone'), reject(1, 'kept')] });
    await db.insert('events', [toInsertRow(gone[0]!)]); // an unmerged copy
    const job = { tenantSeq: 1, userHash: hashUserId('gone') };
    expect(await erasure.erase(job, 'gone')).toEqual({ deletedEvents: 2, deletedRejects: 1 });
    // The deletion is done when erase resolves: no read returns the rows any more.
    expect(await events.countEvents({ tenantSeq: 1, userId: 'gone' })).toBe(0);
    expect(await db.query("SELECT count() AS n FROM events WHERE user_id = 'gone'")).toEqual([{ n: '1' }]);
    // Their ids too (the writer's duplicate lookup), in this tenant only.
    expect(await db.query("SELECT tenant_seq FROM event_ids WHERE user_id = 'gone'")).toEqual([{ tenant_seq: 2 }]);
    expect(await erasure.erase(job)).toEqual({ deletedEvents: 0, deletedRejects: 0 });
    expect(await erasure.erase(job, 'gone')).toEqual({ deletedEvents: 0, deletedRejects: 0 });
    expect(await events.countEvents({ tenantSeq: 1 })).toBe(2);
    expect(await events.countEvents({ tenantSeq: 2 })).toBe(1);
    // By hash alone (a job resumed after a restart).
    expect(await erasure.erase({ tenantSeq: 1, userHash: hashUserId('kept') })).toEqual({ deletedEvents: 1, deletedRejects: 1 });
    expect((await events.queryEvents({ tenantSeq: 1 }, { limit: 10 })).map((e) => e.userId)).toEqual([null]);
    await db.close();
  });

  it('starts no deletion when the user has no rows', async () => {
    const db = await ChDatabase.open(server.url, `svc_erase_${++databases}`);
    await new ClickHouseEventStore(db).commit({ events: [event(1, 'someone')], rejects: [] });
    expect(await new ClickHouseErasureStore(db).erase({ tenantSeq: 1, userHash: hashUserId('nobody') }, 'nobody')).toEqual({ deletedEvents: 0, deletedRejects: 0 });
    expect(await db.query('SELECT count() AS n FROM system.mutations WHERE database = currentDatabase()')).toEqual([{ n: '0' }]);
    await db.close();
  });

  it('a job tried again after its wait timed out waits for the deletion it started instead of starting another', async () => {
    const db = await ChDatabase.open(server.url, `svc_erase_${++databases}`);
    await new ClickHouseEventStore(db).commit({ events: [event(1, "it's gone"), event(1, "it's gone"), event(1, 'kept')], rejects: [reject(1, "it's gone")] });
    const job = { tenantSeq: 1, userHash: hashUserId("it's gone") };
    const mutations = async (table: string) =>
      Number((await db.query<{ n: string }>(`SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND table = '${table}'`))[0]!.n);
    // A busy server: the deletion waits in the queue longer than the job waits for it.
    await db.command('SYSTEM STOP MERGES');
    try {
      const impatient = new ClickHouseErasureStore(db, { mutationWaitMs: 200 });
      await expect(impatient.erase(job, "it's gone")).rejects.toMatchObject({ code: 'storage_unavailable' });
      // Tried again on a node that restarted meanwhile: the user's id is known by its hash only.
      await expect(impatient.erase(job)).rejects.toMatchObject({ code: 'storage_unavailable' });
      expect(await mutations('events')).toBe(1);
      const retried = new ClickHouseErasureStore(db).erase(job);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await mutations('events')).toBe(1);
      await db.command('SYSTEM START MERGES');
      expect(await retried).toEqual({ deletedEvents: 2, deletedRejects: 1 });
    } finally {
      await db.command('SYSTEM START MERGES');
    }
    // Completed only once the rows are gone.
    expect(await new ClickHouseEventStore(db).countEvents({ tenantSeq: 1 })).toBe(1);
    expect(await mutations('events')).toBe(1);
    expect(await mutations('rejected_events')).toBe(1);
    await db.close();
  });

  it('waits until the parts a deletion replaced have left the disk', async () => {
    // Parts replaced by a mutation are removed `old_parts_lifetime` later at a cleanup: both short here.
    const quick = ' SETTINGS old_parts_lifetime = 1, cleanup_delay_period = 1, cleanup_delay_period_random_add = 0';
    // (Before `AS SELECT` in a table made from a query's columns.)
    const withQuick = (s: string) => (/\sAS SELECT /.test(s) ? s.replace(/\sAS SELECT /, `${quick} AS SELECT `) : s + quick);
    const migrations = CH_MIGRATIONS.map((m) => ({ ...m, statements: m.statements.map((s) => (typeof s === 'string' && s.startsWith('CREATE TABLE') ? withQuick(s) : s)) }));
    const db = await ChDatabase.open(server.url, `svc_erase_${++databases}`, { migrations });
    const erasure = new ClickHouseErasureStore(db, { partRemovalWaitMs: 60_000 });
    await new ClickHouseEventStore(db).commit({ events: [event(1, 'gone'), event(1, 'kept')], rejects: [] });
    const before = await db.query<{ name: string }>("SELECT name FROM system.parts WHERE database = currentDatabase() AND table = 'events'");
    await erasure.erase({ tenantSeq: 1, userHash: hashUserId('gone') }, 'gone');
    await erasure.rewriteErased();
    const names = before.map((p) => p.name);
    const left = await db.query<{ name: string }>("SELECT name FROM system.parts WHERE database = currentDatabase() AND table = 'events'");
    expect(left.filter((p) => names.includes(p.name))).toEqual([]);
    expect(left.length).toBeGreaterThan(0);
    await db.close();
  });

  it('lists votes and entries of a broadcast as the embedded backend does, each once', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'svc-ch-votes-'));
    folders.push(folder);
    const duck = await DuckDbDatabase.open(folder);
    const db = await ChDatabase.open(server.url, `svc_erase_${++databases}`);
    const t0 = Date.UTC(2026, 0, 1);
    const rows = [
      event(1, 'u1', { timestampMs: t0 + 3, data: '{"pollId":"p1","optionIndex":1,"optionSelected":"B"}' }),
      event(1, null, { timestampMs: t0 + 1, sessionId: 'svc_anon', data: '{"pollId":"p1","optionIndex":2}' }),
      event(1, 'u2', { timestampMs: t0 + 2, event: 'contest.entered', data: '{"contestId":"c1"}' }),
      event(1, 'u3', { timestampMs: t0 + 2, data: '{"pollId":"p2"}' }),
      event(1, 'u4', { timestampMs: t0 + 4, event: 'order.completed', data: '{}' }),
      event(1, 'u5', { timestampMs: t0 + 5, broadcastId: 'other' }),
      event(2, 'u6', { timestampMs: t0 + 6 }),
    ];
    await new DuckDbEventStore(duck).commit({ events: rows, rejects: [] });
    await new ClickHouseEventStore(db).commit({ events: rows, rejects: [] });
    await db.insert('events', [toInsertRow(rows[0]!)]);
    const expected = await new DuckDbContentStore(duck).listInteractions(1, 'b1');
    expect(expected).toHaveLength(4);
    expect(await new ClickHouseInteractionStore(db).listInteractions(1, 'b1')).toEqual(expected);
    await Promise.all([duck.close(), db.close()]);
  });
});
