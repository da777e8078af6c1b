import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventKey } from '../src';
import { chunkEntries, decodeEntry, type EventLogEntry } from '../src/nats/event-log-chunks';
import { decodeEvents } from '../src/encoded-events';
import { fromInsertLine } from '../src/clickhouse/event-sql';
import { deliveryOf, eventRow, rejectRow } from './event-log-rows';

const keysOf = (events: ReturnType<typeof eventRow>[]) => events.map((e) => eventKey(e.tenantSeq, e.eventId));
/** An entry with its events read back as rows. */
const asRows = (entry: EventLogEntry) => ({ ...entry, events: entry.events.flatMap((block) => decodeEvents(block, fromInsertLine)) });
/** A row as the event database stores it: text well-formed (a lone surrogate becomes U+FFFD). */
const asStored = (e: ReturnType<typeof eventRow>) => ({ ...e, userId: e.userId === null ? null : e.userId.toWellFormed() });

describe('chunking a batch into EVENTS messages', () => {
  it('puts each tenant in messages of its own and keeps every row, text exactly as sent', () => {
    const events = [eventRow(1), eventRow(2, { tenantSeq: 2 }), eventRow(3, { userId: 'lone \ud800 "quote" \\ nul\u0000', data: '{"x":"\u2028"}' })];
    const rejects = [rejectRow(1, { tenantSeq: 2 })];
    const deliveries = [deliveryOf(events[0]!), deliveryOf(events[1]!)];
    const chunks = chunkEntries({ events, keys: keysOf(events), rejects, deliveries }, 1_000_000);
    expect(chunks.map((c) => c.tenantSeq).sort()).toEqual([1, 2]);
    const one = asRows(decodeEntry(chunks.find((c) => c.tenantSeq === 1)!.body));
    const two = asRows(decodeEntry(chunks.find((c) => c.tenantSeq === 2)!.body));
    expect(one).toEqual({ events: [events[0]!, events[2]!].map(asStored), rejects: [], deliveries: [deliveries[0]] });
    expect(two).toEqual({ events: [events[1]], rejects, deliveries: [deliveries[1]] });
    // The user as sent, for the writer's erasure check.
    expect(decodeEntry(chunks.find((c) => c.tenantSeq === 1)!.body).events[0]!.users).toEqual([events[0]!.userId, events[2]!.userId]);
    expect(chunks.find((c) => c.tenantSeq === 1)!.keys).toEqual([keysOf(events)[0], keysOf(events)[2]]);
  });

  it('keeps every message body under the limit, in order, with each event before its deliveries', () => {
    const events = Array.from({ length: 200 }, (_, i) => eventRow(i + 1));
    const deliveries = events.flatMap((e) => [deliveryOf(e, 'ep-1'), deliveryOf(e, 'ep-2')]);
    const chunks = chunkEntries({ events, keys: keysOf(events), rejects: [], deliveries }, 4_000);
    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks) expect(chunk.body.byteLength).toBeLessThanOrEqual(4_000);
    const decoded = chunks.map((c) => asRows(decodeEntry(c.body)));
    expect(decoded.flatMap((d) => d.events)).toEqual(events);
    expect(decoded.flatMap((d) => d.deliveries)).toEqual(deliveries);
    const seen = new Set<string>();
    for (const entry of decoded) {
      for (const e of entry.events) seen.add(e.eventId);
      for (const d of entry.deliveries) expect(seen.has(d.eventId)).toBe(true);
    }
  });

  it('gives the same rows the same message ids, and other rows other ids', () => {
    const events = Array.from({ length: 50 }, (_, i) => eventRow(i + 1));
    const first = chunkEntries({ events, keys: keysOf(events), rejects: [], deliveries: [] }, 3_000);
    // Deliveries planned again on a retry get new ids: they must not change the message id.
    const again = chunkEntries({ events: events.map((e) => ({ ...e, receivedAtMs: e.receivedAtMs + 5 })), keys: keysOf(events), rejects: [], deliveries: [] }, 3_000);
    expect(again.map((c) => c.msgId)).toEqual(first.map((c) => c.msgId));
    const other = chunkEntries({ events: events.slice(1), keys: keysOf(events.slice(1)), rejects: [], deliveries: [] }, 3_000);
    expect(other[0]!.msgId).not.toBe(first[0]!.msgId);
    expect(new Set(first.map((c) => c.msgId)).size).toBe(first.length);
    const otherTenant = chunkEntries({ events: [eventRow(1, { tenantSeq: 9 })], keys: ['9:x'], rejects: [], deliveries: [] }, 3_000);
    expect(otherTenant[0]!.msgId).not.toBe(chunkEntries({ events: [eventRow(1)], keys: ['1:x'], rejects: [], deliveries: [] }, 3_000)[0]!.msgId);
  });

  it('names a message by the sha-256 of its tenant and its items, as every version of the node does', () => {
    // Nodes of two versions side by side (a rolling upgrade) must give a retried batch the same id.
    const events = [eventRow(1), eventRow(2)];
    const rejects = [rejectRow(1)];
    const [chunk] = chunkEntries({ events, keys: keysOf(events), rejects, deliveries: [deliveryOf(events[0]!)] }, 1_000_000);
    const named = ['svc.events 1', `e:${events[0]!.eventId}`, `d:ep-1:${events[0]!.eventId}`, `e:${events[1]!.eventId}`, `r:${rejects[0]!.id}`].join('\n');
    expect(chunk!.msgId).toBe(createHash('sha256').update(named).digest('hex'));
    expect(chunk!.ids).toEqual(events.map((e) => e.eventId));
  });

  it('refuses a row larger than a message rather than sending what the server would refuse', () => {
    const big = eventRow(1, { data: JSON.stringify({ text: 'x'.repeat(5_000) }) });
    expect(() => chunkEntries({ events: [big], keys: keysOf([big]), rejects: [], deliveries: [] }, 4_000)).toThrow(/does not fit/);
  });

  it('reads a body of the first format (rows as JSON), as messages published before an upgrade are', () => {
    const events = [eventRow(1), eventRow(2, { tenantSeq: 2, userId: null })];
    const rejects = [rejectRow(1)];
    const deliveries = [deliveryOf(events[0]!)];
    const body = Buffer.from(JSON.stringify({ events, rejects, deliveries }));
    const entry = decodeEntry(body);
    expect(asRows(entry)).toEqual({ events, rejects, deliveries });
    expect(entry.events.map((b) => [b.tenantSeq, b.ids, b.users, b.received])).toEqual(events.map((e) => [e.tenantSeq, [e.eventId], [e.userId], [e.receivedAtMs]]));
  });

  it('refuses a message body that is not an entry', () => {
    expect(() => decodeEntry(Buffer.from('{"events":[]}'))).toThrow(/lacks/);
    expect(() => decodeEntry(Buffer.from('not json'))).toThrow();
    expect(() => decodeEntry(Buffer.from('{"v":2,"tenantSeq":1}'))).toThrow(/header/);
    expect(() => decodeEntry(Buffer.from('{"v":2,"tenantSeq":1,"ids":["a"],"users":[],"received":[],"rejects":[],"deliveries":[]}\n'))).toThrow(/as many/);
    // Exactly one line per id: more, fewer, or text after the last line refuse the message.
    const header = (ids: number) => `{"v":2,"tenantSeq":1,"ids":${JSON.stringify(Array.from({ length: ids }, (_, i) => `id${i}`))},"users":${JSON.stringify(Array(ids).fill(null))},"received":${JSON.stringify(Array(ids).fill(1))},"rejects":[],"deliveries":[]}\n`;
    expect(decodeEntry(Buffer.from(`${header(2)}{"a":1}\n{"a":2}\n`)).events[0]!.ids).toHaveLength(2);
    expect(() => decodeEntry(Buffer.from(`${header(1)}{"a":1}\n{"a":2}\n`))).toThrow(/one line per event/);
    expect(() => decodeEntry(Buffer.from(`${header(2)}{"a":1}\n`))).toThrow(/one line per event/);
    expect(() => decodeEntry(Buffer.from(`${header(1)}{"a":1}\n{"a":2}`))).toThrow(/one line per event/);
    expect(() => decodeEntry(Buffer.from(`${header(0)}{"a":1}\n`))).toThrow(/one line per event/);
  });
});
