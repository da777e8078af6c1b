import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DuckDbDatabase, DuckDbEventStore, type EventRow, type QuarantineRow } from '../src';
import { CREATE_STAGE_SQL, STAGE_TABLE, eventSlices, stageEvents, stageJson } from '../src/duckdb/event-stage';

const opened: DuckDbDatabase[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
});

async function database(dir = mkdtempSync(join(tmpdir(), 'svc-stage-'))): Promise<DuckDbDatabase> {
  const db = await DuckDbDatabase.open(dir);
  opened.push(db);
  return db;
}

const eventId = (n: number) => `0190a6a0-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;

function row(n: number, fields: Partial<EventRow> = {}): EventRow {
  return {
    tenantSeq: 1, eventId: eventId(n), event: 'checkout.completed', userId: `u-${n}`, sessionId: `svc_s${n}`, broadcastId: 'b', campaignId: 7,
    timestampMs: 1_700_000_000_000 + n, receivedAtMs: 1_700_000_000_500 + n, country: 'DE', orderId: `o-${n}`, sponsorId: 'sp', total: 12.5,
    items: '[{"productId":"p","quantity":1,"unitPrice":12.5}]', data: '{"currency":"EUR"}', ...fields,
  };
}

const reject = (n: number): QuarantineRow => ({
  tenantSeq: 1, id: eventId(1000 + n), receivedAtMs: 1_700_000_000_000, code: 'unknown_event', detail: 'x', errors: '[]', eventName: null, userId: null, payload: '{}',
});

const storedIds = async (store: DuckDbEventStore) => (await store.queryEvents({ tenantSeq: 1 }, { limit: 100 })).map((e) => e.eventId).sort();

describe('staging events from JSON text', () => {
  it('stores text fields and numbers exactly as sent', async () => {
    const store = new DuckDbEventStore(await database());
    // No lone surrogate here: the text goes to DuckDB as JSON.stringify wrote it.
    const hostile = ['"quoted", with \\ backslash\\ud800 and \'apostrophe\'', 'nul\u0000inside', '\ufeffbom first', 'emoji 😀 and e\u0301', 'line\r\nbreak\ttab\u2028'];
    const rows = hostile.map((text, i) =>
      row(i + 1, { userId: text, sessionId: `s-${text}`, broadcastId: `b-${text}`, orderId: text, sponsorId: text, data: JSON.stringify({ text }) }),
    );
    const big = row(9, { campaignId: Number.MAX_SAFE_INTEGER, total: 999_999_999_999.99, timestampMs: 253_402_300_799_999, receivedAtMs: 0 });
    const inexact = row(10, { total: 0.1 + 0.2, orderId: null, sponsorId: null, items: null, country: null, userId: null });
    const { inserted } = await store.commit({ events: [...rows, big, inexact], rejects: [] });
    expect(inserted.size).toBe(rows.length + 2);
    const byId = new Map((await store.queryEvents({ tenantSeq: 1 }, { limit: 100 })).map((e) => [e.eventId, e]));
    hostile.forEach((text, i) => {
      const e = byId.get(eventId(i + 1))!;
      expect([e.userId, e.sessionId, e.broadcastId, e.orderId, e.sponsorId]).toEqual([text, `s-${text}`, `b-${text}`, text, text]);
      expect(e.data).toEqual({ text });
      expect([e.campaignId, e.total, e.country, e.timestamp]).toEqual([7, 12.5, 'DE', new Date(1_700_000_000_000 + i + 1).toISOString()]);
    });
    const b = byId.get(eventId(9))!;
    expect([b.campaignId, b.total, b.timestamp, b.receivedAt]).toEqual([Number.MAX_SAFE_INTEGER, 999_999_999_999.99, '9999-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z']);
    const x = byId.get(eventId(10))!;
    expect([x.total, x.orderId, x.sponsorId, x.items, x.country, x.userId]).toEqual([0.1 + 0.2, null, null, null, null, null]);
  });

  it('stores a lone surrogate as U+FFFD, as the appender did, and keeps the escape inside data', async () => {
    const store = new DuckDbEventStore(await database());
    const lone = row(1, { userId: '\ud800 high first', sessionId: 'low last \udc00', broadcastId: 'pair 😀 then \ud83d', orderId: '\udc00\ud800', data: JSON.stringify({ raw: '\ud800' }) });
    await store.commit({ events: [lone, row(2)], rejects: [] });
    const [first, second] = await store.queryEvents({ tenantSeq: 1 }, { limit: 10 });
    expect([first!.userId, first!.sessionId, first!.broadcastId, first!.orderId]).toEqual(['\ufffd high first', 'low last \ufffd', 'pair 😀 then \ufffd', '\ufffd\ufffd']);
    // Inside data the surrogate is an escape in the JSON text, kept as sent.
    expect(first!.data).toEqual({ raw: '\ud800' });
    expect(second!.userId).toBe('u-2');
    expect(JSON.parse(stageJson([row(3, { userId: 'a\udfffb' })])).user_id).toEqual(['a\ufffdb']);
  });

  it('stores only the new events of an events-only commit that repeats an id stored before a restart, and stages nothing for later', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-stage-'));
    const first = await database(dir);
    await new DuckDbEventStore(first).commit({ events: [row(1)], rejects: [] });
    await first.close();
    const store = new DuckDbEventStore(await database(dir));
    // No deliveries and no rejects: the single-statement insert meets the stored id and the
    // commit goes the ON CONFLICT way, which must store exactly the others.
    const { inserted } = await store.commit({ events: [row(2), row(1), row(3)], rejects: [] });
    expect([...inserted].sort()).toEqual([`1:${eventId(2)}`, `1:${eventId(3)}`]);
    // A commit with a reject goes through the stage: had rows stayed there, they would ride along.
    const next = await store.commit({ events: [row(4)], rejects: [reject(1)] });
    expect([...next.inserted]).toEqual([`1:${eventId(4)}`]);
    expect(await storedIds(store)).toEqual([1, 2, 3, 4].map(eventId));
  });

  it('fails a commit whose statement fails for another reason, and the next commits store their own events', async () => {
    const store = new DuckDbEventStore(await database());
    await expect(store.commit({ events: [row(1, { eventId: 'not-a-uuid' })], rejects: [] })).rejects.toThrow(/uuid/i);
    await expect(store.commit({ events: [row(2), row(3, { eventId: 'not-a-uuid' })], rejects: [reject(1)] })).rejects.toThrow(/uuid/i);
    expect(await storedIds(store)).toEqual([]);
    await store.commit({ events: [row(4)], rejects: [] });
    await store.commit({ events: [row(5)], rejects: [reject(2)] });
    expect(await storedIds(store)).toEqual([4, 5].map(eventId));
  });

  it('splits a large commit into slices, one text at a time, keeping every row and its order', async () => {
    const db = await database();
    const rows = Array.from({ length: 250 }, (_, i) => row(i, { data: JSON.stringify({ pad: 'x'.repeat(i * 10) }) }));
    // About 20 events' worth of text per slice: the 250 events need a dozen or more.
    const slices = eventSlices(rows, 20_000);
    expect(slices.length).toBeGreaterThan(10);
    expect(slices.flatMap(([start, end]) => Array.from({ length: end - start }, (_, k) => start + k))).toEqual(rows.map((_, i) => i));
    const staged = await db.write(async (connection) => {
      await connection.run(CREATE_STAGE_SQL);
      await stageEvents(connection, rows, slices);
      const result = await connection.runAndReadAll(`SELECT event_id, data FROM ${STAGE_TABLE} ORDER BY rowid`);
      await connection.run(`DROP TABLE ${STAGE_TABLE}`);
      return result.getRowObjectsJS();
    });
    expect(staged.map((r) => [r.event_id, r.data])).toEqual(rows.map((r) => [r.eventId, r.data]));
    // A slice ends with the event that takes it past the limit, so a large event never waits
    // for company; no events, no slices.
    const large = row(1, { data: JSON.stringify({ pad: 'y'.repeat(30_000) }) });
    expect(eventSlices([row(0), large, row(2)], 20_000)).toEqual([[0, 2], [2, 3]]);
    expect(eventSlices([large, large], 20_000)).toEqual([[0, 1], [1, 2]]);
    expect(eventSlices([])).toEqual([]);
  });
});
