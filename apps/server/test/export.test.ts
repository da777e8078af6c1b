import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';

const NOW = Date.UTC(2026, 10, 21, 12);
const DAY = 86_400_000;

describe('GET /v1/analytics/events', () => {
  let t: TestApp;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = new ManualClock(NOW);
    t = await startTestApp({ clock });
  });
  afterEach(() => t.close());

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  const ingest = async (events: Record<string, unknown>[]) => {
    const response = await t.app.inject({ method: 'POST', url: '/v1/events', headers: admin(), payload: { events } });
    expect(response.json().rejected).toEqual([]);
  };
  const exportAs = (query: string, headers: Record<string, string> = {}) =>
    t.app.inject({ url: `/v1/analytics/events?${query}`, headers: { ...admin(), ...headers } });

  const awkward = [
    'comma, inside',
    'quote " inside',
    'line\nbreak',
    'crlf\r\nbreak',
    'Überraschung — ça marche 🎉',
    '=HYPERLINK("x")',
    '  spaces  ',
  ];

  async function seedAwkward() {
    const events = awkward.map((text, i) =>
      validEvent('poll.voted', new Date(NOW - DAY + i * 1000), {
        userId: `user-${i}`,
        data: { pollId: 'p1', questionText: text, optionSelected: text, optionIndex: i },
      }),
    );
    events.push(validEvent('checkout.completed', new Date(NOW - DAY + 60_000), { userId: 'buyer, "the" one' }));
    await ingest(events);
    return events;
  }

  it('neutralises cells that a spreadsheet would run as formulas when asked (csvSafe=true), and only then', async () => {
    const formulas = ['=1+2', '+1-1', '-2+3', "@SUM(A1)", "=cmd|' /C calc'!A0"];
    await ingest([
      ...formulas.map((userId, i) => validEvent('broadcast.joined', new Date(NOW - DAY + i * 1000), { userId })),
      validEvent('checkout.completed', new Date(NOW - DAY + 60_000), { userId: 'plain-user', orderId: '=order', sponsorId: '@sponsor' }),
    ]);
    const cells = async (query: string) => {
      const response = await exportAs(query);
      expect(response.statusCode).toBe(200);
      return parse(response.body, { columns: true }) as Array<Record<string, string>>;
    };
    // The REST export keeps values exactly as stored, for warehouses.
    const raw = await cells('format=csv');
    expect(raw.map((r) => r.userId)).toEqual([...formulas, 'plain-user']);
    expect(raw[5]).toMatchObject({ orderId: '=order', sponsorId: '@sponsor' });
    expect(await cells('format=csv&csvSafe=false')).toEqual(raw);

    const safe = await cells('format=csv&csvSafe=true');
    expect(safe.map((r) => r.userId)).toEqual([...formulas.map((f) => `'${f}`), 'plain-user']);
    expect(safe[5]).toMatchObject({ orderId: "'=order", sponsorId: "'@sponsor" });
    for (const row of safe) for (const cell of Object.values(row)) expect(cell, cell).not.toMatch(/^[=+\-@\t\r]/);
    // Everything else is unchanged.
    expect(safe.map((r) => ({ ...r, userId: '', orderId: '', sponsorId: '' }))).toEqual(raw.map((r) => ({ ...r, userId: '', orderId: '', sponsorId: '' })));

    const invalid = await exportAs('format=csv&csvSafe=yes');
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().errors[0].path).toBe('/query/csvSafe');
  });

  it('exports CSV that a standard parser reads back into exactly the stored events', async () => {
    const sent = await seedAwkward();
    const response = await exportAs('format=csv');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/csv');
    expect(response.headers['content-disposition']).toMatch(/^attachment; filename="svc-events-\d{8}T\d{6}\.csv"$/);
    const records = parse(response.body, { columns: true }) as Record<string, string>[];
    expect(Object.keys(records[0]!)).toEqual([
      'eventId', 'event', 'userId', 'sessionId', 'broadcastId', 'campaignId', 'timestamp', 'receivedAt',
      'country', 'orderId', 'sponsorId', 'total', 'items', 'data',
    ]);
    expect(records).toHaveLength(sent.length);
    const stored = await t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq }, { limit: 100 });
    records.forEach((record, i) => {
      const event = stored[i]!;
      expect(record.eventId).toBe(event.eventId);
      expect(record.userId).toBe(event.userId);
      expect(record.timestamp).toBe(event.timestamp);
      expect(record.campaignId).toBe(String(event.campaignId));
      expect(JSON.parse(record.data!)).toEqual(event.data);
      expect(record.items === '' ? null : JSON.parse(record.items!)).toEqual(event.items);
      expect(record.total === '' ? null : Number(record.total)).toBe(event.total);
    });
    expect(records.map((r) => JSON.parse(r.data!).questionText).filter(Boolean)).toEqual(awkward);
  });

  it('exports NDJSON, one JSON object per line, commerce fields on commerce events only', async () => {
    const sent = await seedAwkward();
    const response = await exportAs('', { accept: 'application/x-ndjson' });
    expect(response.headers['content-type']).toContain('application/x-ndjson');
    expect(response.headers['content-disposition']).toMatch(/^attachment; filename="svc-events-\d{8}T\d{6}\.ndjson"$/);
    const lines = response.body.split('\n');
    expect(lines.pop()).toBe('');
    const records = lines.map((line) => JSON.parse(line));
    expect(records).toHaveLength(sent.length);
    const vote = records.find((r) => r.event === 'poll.voted');
    expect(Object.keys(vote).sort()).toEqual(
      ['eventId', 'event', 'userId', 'sessionId', 'broadcastId', 'campaignId', 'timestamp', 'receivedAt', 'country', 'data'].sort(),
    );
    const purchase = records.find((r) => r.event === 'checkout.completed');
    expect(purchase).toMatchObject({ orderId: 'order-1', sponsorId: 'sponsor-1', total: 99, userId: 'buyer, "the" one' });
    expect(purchase.items).toHaveLength(1);
  });

  it('gzips the stream when asked', async () => {
    await seedAwkward();
    const response = await exportAs('format=ndjson', { 'accept-encoding': 'gzip, deflate' });
    expect(response.headers['content-encoding']).toBe('gzip');
    const text = gunzipSync(response.rawPayload).toString('utf8');
    expect(text.trim().split('\n')).toHaveLength(awkward.length + 1);
    const csv = await exportAs('format=csv', { 'accept-encoding': 'gzip' });
    expect(csv.headers['content-encoding']).toBe('gzip');
    const rows = parse(gunzipSync(csv.rawPayload).toString('utf8'), { columns: true }) as Array<Record<string, string>>;
    expect(rows.map((r) => r.eventId).sort()).toEqual(text.trim().split('\n').map((line) => JSON.parse(line).eventId).sort());
  });

  it('pages JSON by cursor: every event exactly once, also while new events arrive', async () => {
    const initial = Array.from({ length: 57 }, (_, i) => validEvent('poll.viewed', new Date(NOW - 3600_000 + (i % 9) * 1000)));
    await ingest(initial);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `limit=10${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await exportAs(url)).json();
      seen.push(...page.data.map((e: { eventId: string }) => e.eventId));
      cursor = page.nextCursor;
      pages++;
      // Ingest goes on between pages, with timestamps before and after the cursor.
      clock.advance(1000);
      await ingest([validEvent('poll.viewed', new Date(NOW - 3600_000)), validEvent('poll.viewed', new Date(NOW))]);
    } while (cursor);
    expect(pages).toBe(6);
    expect(seen).toHaveLength(57);
    expect(new Set(seen)).toEqual(new Set(initial.map((e) => e.eventId)));
  });

  it('selects exactly the right events with every filter, at UTC day boundaries', async () => {
    const d = (iso: string) => new Date(iso);
    const events = [
      validEvent('poll.viewed', d('2026-11-01T00:00:00.000Z'), { broadcastId: 'b1', userId: 'u1' }), // 0 first ms of Nov 1
      validEvent('poll.viewed', d('2026-10-31T23:59:59.999Z'), { broadcastId: 'b1', userId: 'u1' }), // 1 last ms of Oct 31
      validEvent('poll.voted', d('2026-11-02T23:59:59.999Z'), { broadcastId: 'b2', userId: 'u2' }), // 2 last ms of Nov 2
      validEvent('poll.voted', d('2026-11-03T00:00:00.000Z'), { broadcastId: 'b2', userId: 'u2' }), // 3 first ms of Nov 3
      validEvent('sponsor_moment.tapped', d('2026-11-02T12:00:00.000Z'), { broadcastId: 'b1', data: { momentId: 'm1', sponsorId: 'acme' } }), // 4
      validEvent('checkout.completed', d('2026-11-02T13:00:00.000Z'), { broadcastId: 'b3', sponsorId: 'acme', country: 'FR' }), // 5
      validEvent('checkout.completed', d('2026-11-02T14:00:00.000Z'), { broadcastId: 'b3', sponsorId: 'other', country: 'DE' }), // 6
    ];
    // Broadcast b3 belongs to campaign 9; the others are discovered under the default campaign.
    await t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: admin(), payload: { id: 9, name: 'Nine' } });
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id: 'b3', campaignId: 9 } });
    await ingest(events);
    const ids = async (query: string) =>
      (await exportAs(`${query}&limit=100`)).json().data.map((e: { eventId: string }) => events.findIndex((s) => s.eventId === e.eventId));

    expect(await ids('from=2026-11-01&to=2026-11-02')).toEqual([0, 4, 5, 6, 2]);
    expect(await ids('from=2026-11-01&to=2026-11-01')).toEqual([0]);
    expect(await ids('to=2026-10-31')).toEqual([1]);
    expect(await ids('from=2026-11-03')).toEqual([3]);
    expect(await ids('from=2026-11-02T12:00:00Z&to=2026-11-02T14:00:00Z')).toEqual([4, 5]);
    expect(await ids('from=2026-11-02T13:00:00%2B01:00&to=2026-11-02T14:00:00.001Z')).toEqual([4, 5, 6]);
    expect(await ids('campaignId=9')).toEqual([5, 6]);
    expect(await ids('campaignId=1')).toEqual([1, 0, 4, 2, 3]);
    expect(await ids('broadcastId=b2')).toEqual([2, 3]);
    expect(await ids('userId=u1')).toEqual([1, 0]);
    expect(await ids('sponsorId=acme')).toEqual([4, 5]);
    expect(await ids('country=fr')).toEqual([5]);
    expect(await ids('event=poll.voted,checkout.completed')).toEqual([5, 6, 2, 3]);
    expect(await ids('event=poll.voted&from=2026-11-03&broadcastId=b2')).toEqual([3]);
  });

  it('names the bad parameter in a 400 problem', async () => {
    const cases: Array<[string, string]> = [
      ['campaignId=abc', '/query/campaignId'],
      ['from=2026-02-30', '/query/from'],
      ['to=yesterday', '/query/to'],
      ['from=2026-11-02T10:00:00', '/query/from'],
      ['event=poll.voted,poll.nope', '/query/event'],
      ['country=Germany', '/query/country'],
      ['limit=10001', '/query/limit'],
      ['format=xml', '/query/format'],
      ['cursor=garbage', '/query/cursor'],
    ];
    for (const [query, path] of cases) {
      const response = await exportAs(query);
      expect(response.statusCode, query).toBe(400);
      expect(response.json().code).toBe('validation_failed');
      expect(response.json().errors.map((e: { path: string }) => e.path), query).toContain(path);
    }
    // An inverted range has a code of its own, so that a client can tell it from a typo.
    const inverted = await exportAs('from=2026-11-02&to=2026-11-01');
    expect(inverted.statusCode).toBe(400);
    expect(inverted.json()).toMatchObject({ code: 'invalid_range', errors: [{ path: '/query/to', code: 'invalid_range' }] });
    // Without `to` the export has no end: a start in the future is not inverted, it holds no events yet.
    const ahead = await exportAs(`from=${new Date(NOW + 86_400_000).toISOString().slice(0, 10)}`);
    expect(ahead.statusCode, ahead.body).toBe(200);
    expect(ahead.json()).toEqual({ data: [], nextCursor: null });
    const unacceptable = await exportAs('', { accept: 'application/xml' });
    expect(unacceptable.statusCode).toBe(406);
    expect(unacceptable.json().code).toBe('unsupported_format');
  });

  it('pages JSON newest first with order=desc, and refuses its cursor for the other order', async () => {
    const events = Array.from({ length: 12 }, (_, i) => validEvent('poll.viewed', new Date(NOW - 3600_000 + (i % 4) * 1000)));
    await ingest(events);
    const seen: Array<{ eventId: string; timestamp: string }> = [];
    let cursor: string | null = null;
    do {
      const page: { data: Array<{ eventId: string; timestamp: string }>; nextCursor: string | null } = (await exportAs(`order=desc&limit=5${cursor ? `&cursor=${cursor}` : ''}`)).json();
      seen.push(...page.data);
      cursor = page.nextCursor;
      if (cursor) {
        const crossed = await exportAs(`limit=5&cursor=${cursor}`);
        expect(crossed.statusCode).toBe(400);
      }
    } while (cursor);
    const expected = [...seen].sort((a, b) => b.timestamp.localeCompare(a.timestamp) || (a.eventId < b.eventId ? 1 : -1));
    expect(seen.map((e) => e.eventId)).toEqual(expected.map((e) => e.eventId));
    expect(new Set(seen.map((e) => e.eventId))).toEqual(new Set(events.map((e) => e.eventId)));
    expect(seen[0]!.timestamp > seen[seen.length - 1]!.timestamp).toBe(true);
    const bad = await exportAs('order=newest');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].path).toBe('/query/order');
  });

  it('refuses a cursor reused with other filters', async () => {
    await ingest(Array.from({ length: 3 }, () => validEvent('poll.viewed', new Date(NOW - 1000))));
    const { nextCursor } = (await exportAs('limit=1')).json();
    const misuse = await exportAs(`limit=1&broadcastId=other&cursor=${nextCursor}`);
    expect(misuse.statusCode).toBe(400);
    expect(misuse.json().detail).toContain('other filters');
  });

  it("never shows another tenant's events", async () => {
    await ingest([validEvent('poll.viewed', new Date(NOW - 1000))]);
    const other = await t.app.inject({ url: '/v1/analytics/events?format=ndjson', headers: { authorization: `Bearer ${t.other.adminToken}` } });
    expect(other.body).toBe('');
    const keyOnly = await t.app.inject({ url: `/v1/analytics/events?apiKey=${t.demo.apiKey}` });
    expect(keyOnly.statusCode).toBe(401);
  });
});
