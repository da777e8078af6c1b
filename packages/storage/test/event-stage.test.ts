import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DuckDbDatabase, DuckDbEventStore, type EventRow } from '../src';
import { CREATE_STAGE_SQL, STAGE_TABLE, eventJsonTexts, stageEvents, stageJson } from '../src/duckdb/event-stage';

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

describe('staging events from JSON text', () => {
  it('stores text fields exactly, and a lone surrogate as U+FFFD as the appender did', async () => {
    const db = await database();
    const store = new DuckDbEventStore(db);
    const hostile = ['"quoted", with \\ backslash\\ud800 and \'apostrophe\'', 'nul\u0000inside', '\ufeffbom first', 'emoji 😀 and e\u0301', 'line\r\nbreak\ttab'];
    const rows = [
      ...hostile.map((text, i) => row(i + 1, { userId: text, sessionId: `s-${text}`, broadcastId: `b-${text}`, orderId: text, sponsorId: text, data: JSON.stringify({ text }) })),
      row(10, { userId: 'lone \ud800 high', sessionId: 'lone low \udc00', broadcastId: 'pair 😀 \ud83d', orderId: null, sponsorId: null, total: null, items: null, country: null, data: JSON.stringify({ raw: '\ud800' }) }),
    ];
    const { inserted } = await store.commit({ events: rows, rejects: [] });
    expect(inserted.size).toBe(rows.length);
    const stored = await store.queryEvents({ tenantSeq: 1 }, { limit: 100 });
    const byId = new Map(stored.map((e) => [e.eventId, e]));
    hostile.forEach((text, i) => {
      const e = byId.get(eventId(i + 1))!;
      expect([e.userId, e.sessionId, e.broadcastId, e.orderId, e.sponsorId]).toEqual([text, `s-${text}`, `b-${text}`, text, text]);
      expect(e.data).toEqual({ text });
      expect([e.campaignId, e.total, e.country, e.timestamp]).toEqual([7, 12.5, 'DE', new Date(1_700_000_000_000 + i + 1).toISOString()]);
    });
    const lone = byId.get(eventId(10))!;
    expect([lone.userId, lone.sessionId, lone.broadcastId]).toEqual(['lone \ufffd high', 'lone low \ufffd', 'pair 😀 \ufffd']);
    // Inside data the surrogate is an escape in the JSON text, kept as sent.
    expect(lone.data).toEqual({ raw: '\ud800' });
    expect([lone.orderId, lone.sponsorId, lone.total, lone.items, lone.country]).toEqual([null, null, null, null, null]);
  });

  it('writes a typical commit as one JSON text and mends only texts holding a lone surrogate', () => {
    const clean = stageJson([row(1), row(2)]);
    expect(JSON.parse(clean).event_id).toEqual([eventId(1), eventId(2)]);
    const mended = JSON.parse(stageJson([row(1, { userId: 'a\udfffb' })]));
    expect(mended.user_id).toEqual(['a\ufffdb']);
  });

  it('splits a large commit into several texts, keeping every row and its order', async () => {
    const db = await database();
    const rows = Array.from({ length: 250 }, (_, i) => row(i, { data: JSON.stringify({ pad: 'x'.repeat(i * 10) }) }));
    const staged = await db.write(async (connection) => {
      await connection.run(CREATE_STAGE_SQL);
      // About 20 events' worth of text per call: the 250 events need a dozen or more texts.
      const texts = eventJsonTexts(rows, 20_000);
      expect(texts.length).toBeGreaterThan(10);
      await stageEvents(connection, texts);
      const result = await connection.runAndReadAll(`SELECT event_id, data, rowid FROM ${STAGE_TABLE} ORDER BY rowid`);
      await connection.run(`DROP TABLE ${STAGE_TABLE}`);
      return result.getRowObjectsJS();
    });
    expect(staged.map((r) => [r.event_id, r.data])).toEqual(rows.map((r) => [r.eventId, r.data]));
  });

  it('stores only the new events of an events-only commit that repeats an id stored before a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-stage-'));
    const first = await database(dir);
    await new DuckDbEventStore(first).commit({ events: [row(1)], rejects: [] });
    await first.close();
    const db = await database(dir);
    const store = new DuckDbEventStore(db);
    // No deliveries and no rejects: the single-statement insert meets the stored id and the
    // commit goes the ON CONFLICT way, which must store exactly the others.
    const { inserted } = await store.commit({ events: [row(2), row(1), row(3)], rejects: [] });
    expect([...inserted].sort()).toEqual([`1:${eventId(2)}`, `1:${eventId(3)}`]);
    expect(await store.countEvents({ tenantSeq: 1 })).toBe(3);
    // Nothing stays staged: the next commit stores its own events only.
    await store.commit({ events: [row(4)], rejects: [] });
    expect((await store.queryEvents({ tenantSeq: 1 }, { limit: 10 })).map((e) => e.eventId)).toEqual([1, 2, 3, 4].map(eventId));
  });
});
