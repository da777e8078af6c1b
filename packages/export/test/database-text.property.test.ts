import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import { DuckDbDatabase, DuckDbEventStore, type EventRow } from '@svc/storage';
import { storedEvent } from './arbitraries';
import { eventToCsv, eventToNdjson } from './reference-encoders';
import { storedEventRow } from '../../storage/test/stored-event-row';

/** Identifiers as validation lets them in: printable (strings inside `data` may hold anything). */
const printable = (text: string) => text.replace(/[\u0000-\u001f\u007f]/g, '·');
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

const toRow = storedEventRow;

/** The export order: event time, then event id. */
const exportOrder = (a: StoredEvent, b: StoredEvent) => Date.parse(a.timestamp) - Date.parse(b.timestamp) || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = '';
  for await (const chunk of chunks) all += chunk;
  return all;
}

describe('export text made by the database', () => {
  const folder = mkdtempSync(join(tmpdir(), 'svc-export-text-'));
  let db: DuckDbDatabase;
  let store: DuckDbEventStore;
  let nextTenant = 1;

  beforeAll(async () => {
    db = await DuckDbDatabase.open(folder);
    // Windows of a few rows: a run crosses many windows, growing and shrinking.
    store = new DuckDbEventStore(db, 4);
  });
  afterAll(async () => {
    await db.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('is byte for byte what the reference encoders give, in (timestamp, eventId) order, across windows', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(asIngested, { selector: (e) => e.eventId, maxLength: 40 }), async (events) => {
        const tenantSeq = nextTenant++;
        if (events.length) await store.commit({ events: events.map((e) => toRow(tenantSeq, e)), rejects: [] });
        const ordered = [...events].sort(exportOrder);
        expect(await text(store.streamEventText({ tenantSeq }, 'ndjson'))).toBe(ordered.map(eventToNdjson).join(''));
        expect(await text(store.streamEventText({ tenantSeq }, 'csv'))).toBe(ordered.map((e) => eventToCsv(e)).join(''));
      }),
      { numRuns: 25 },
    );
  });

  it('writes the spreadsheet CSV (formula-like cells neutralised) byte for byte as the reference encoder does', async () => {
    // One window per run: the windows themselves are covered above.
    const wideStore = new DuckDbEventStore(db);
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(asIngested, { selector: (e) => e.eventId, maxLength: 40 }), async (events) => {
        const tenantSeq = nextTenant++;
        if (events.length) await wideStore.commit({ events: events.map((e) => toRow(tenantSeq, e)), rejects: [] });
        const ordered = [...events].sort(exportOrder);
        expect(await text(wideStore.streamEventText({ tenantSeq }, 'csv', { neutraliseFormulas: true }))).toBe(ordered.map((e) => eventToCsv(e, { neutraliseFormulas: true })).join(''));
      }),
      { numRuns: 15 },
    );
  });

  it('keeps events of one millisecond together and in id order when a window would hold more than its aim', async () => {
    const tenantSeq = nextTenant++;
    const events = fc.sample(asIngested, { numRuns: 30, seed: 7 }).map((e, i) => ({
      ...e,
      eventId: `0190a000-0000-7000-8000-${String(1000 + ((i * 7) % 30)).padStart(12, '0')}`,
      timestamp: new Date(Date.UTC(2026, 0, 1, 12) + (i % 3)).toISOString(),
    }));
    await store.commit({ events: events.map((e) => toRow(tenantSeq, e)), rejects: [] });
    const lines = (await text(store.streamEventText({ tenantSeq }, 'ndjson'))).split('\n').slice(0, -1);
    expect(lines).toEqual([...events].sort(exportOrder).map((e) => eventToNdjson(e).slice(0, -1)));
  });

  it('queries the next window ahead, and a consumer that stops early leaves no window query open', async () => {
    const tenantSeq = nextTenant++;
    const start = Date.UTC(2026, 0, 1);
    const events = fc.sample(asIngested, { numRuns: 40, seed: 5 }).map((e, i) => ({ ...e, timestamp: new Date(start + i * 3_600_000).toISOString() }));
    await store.commit({ events: events.map((e) => toRow(tenantSeq, e)), rejects: [] });
    const original = db.streamColumn.bind(db);
    let started = 0;
    let open = 0;
    db.streamColumn = async function* (sql, values) {
      started++;
      open++;
      try {
        yield* original(sql, values);
      } finally {
        open--;
      }
    };
    try {
      let chunks = 0;
      for await (const chunk of store.streamEventText({ tenantSeq }, 'ndjson')) {
        expect(chunk.length).toBeGreaterThan(0);
        // While the first window is read, the second one's query has started.
        expect(started).toBe(2);
        if (++chunks === 1) break;
      }
      expect(open).toBe(0);
      expect(await text(store.streamEventText({ tenantSeq }, 'ndjson'))).toBe([...events].sort(exportOrder).map(eventToNdjson).join(''));
      expect(open).toBe(0);
      expect(started).toBeGreaterThan(10); // windows of about 4 rows
    } finally {
      db.streamColumn = original;
    }
  });

  it('queries one window at a time when the database has little memory', async () => {
    const small = await DuckDbDatabase.open(mkdtempSync(join(tmpdir(), 'svc-export-small-')), { memoryLimit: '128MB' });
    const smallStore = new DuckDbEventStore(small, 4);
    const start = Date.UTC(2026, 0, 1);
    const events = fc.sample(asIngested, { numRuns: 30, seed: 6 }).map((e, i) => ({ ...e, timestamp: new Date(start + i * 3_600_000).toISOString() }));
    await smallStore.commit({ events: events.map((e) => toRow(1, e)), rejects: [] });
    const original = small.streamColumn.bind(small);
    let open = 0;
    let most = 0;
    small.streamColumn = async function* (sql, values) {
      most = Math.max(most, ++open);
      try {
        yield* original(sql, values);
      } finally {
        open--;
      }
    };
    expect(await text(smallStore.streamEventText({ tenantSeq: 1 }, 'ndjson'))).toBe([...events].sort(exportOrder).map(eventToNdjson).join(''));
    expect(most).toBe(1);
    await small.close();
  });

  it('applies the filter and the received-up-to bound in every window', async () => {
    const tenantSeq = nextTenant++;
    const start = Date.UTC(2026, 0, 1);
    const events = fc.sample(asIngested, { numRuns: 50, seed: 11 }).map((e, i) => ({
      ...e,
      broadcastId: i % 2 ? 'odd' : 'even',
      timestamp: new Date(start + i * 3_600_000).toISOString(),
      receivedAt: new Date(start + i * 3_600_000 + 1_000).toISOString(),
    }));
    await store.commit({ events: events.map((e) => toRow(tenantSeq, e)), rejects: [] });
    const upTo = start + 40 * 3_600_000;
    const got = await text(store.streamEventText({ tenantSeq, broadcastId: 'odd', receivedUpToMs: upTo }, 'ndjson'));
    const expected = events.filter((e, i) => i % 2 === 1 && Date.parse(e.receivedAt) <= upTo);
    expect(got).toBe(expected.map(eventToNdjson).join(''));
    expect(expected).toHaveLength(20);
    expect(await text(store.streamEventText({ tenantSeq: nextTenant++ }, 'csv'))).toBe('');
  });
});
