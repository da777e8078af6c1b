import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EVENT_NAMES, ManualClock } from '@svc/protocol';
import { allEventTypes, validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';
import { withoutNodeLabel } from './prometheus-text';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

describe('POST /v1/events', () => {
  let t: TestApp;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock(NOW);
    t = await startTestApp({ clock });
  });
  afterEach(() => t.close());

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-svc-api-key': t.demo.apiKey, 'content-type': 'application/json', ...headers },
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const stored = () => t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq }, { limit: 1000 });

  it('stores each of the 16 event types exactly once when the batch is sent three times', async () => {
    const events = allEventTypes(new Date(NOW - 1000));
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await post({ sentAt: new Date(NOW).toISOString(), events })).json());
    expect(answers[0]).toEqual({ accepted: 16, duplicates: 0, rejected: [] });
    expect(answers[1]).toEqual({ accepted: 0, duplicates: 16, rejected: [] });
    expect(answers[2]).toEqual({ accepted: 0, duplicates: 16, rejected: [] });
    const rows = await stored();
    expect(rows).toHaveLength(16);
    expect(new Set(rows.map((r) => r.event))).toEqual(new Set(EVENT_NAMES));
  });

  it('accepts each new event of a request once, counting stored and repeated ones as duplicates, and tells listeners of the new ones only', async () => {
    const [a, b, c] = [0, 1, 2].map(() => validEvent('poll.voted', new Date(NOW - 1000)));
    expect((await post({ events: [a] })).json()).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    const heard: string[] = [];
    t.services.bus.subscribe('poll.voted', ({ votes }) => {
      heard.push(...votes.map((vote) => vote.eventId));
    });
    expect((await post({ events: [b, a, b, c] })).json()).toEqual({ accepted: 2, duplicates: 2, rejected: [] });
    expect(heard).toEqual([b!.eventId, c!.eventId]);
    expect((await post({ events: [c, c] })).json()).toEqual({ accepted: 0, duplicates: 2, rejected: [] });
    expect(heard).toHaveLength(2);
    expect(await stored()).toHaveLength(3);
  });

  it('stores the full record, with commerce fields on commerce events only', async () => {
    const purchase = validEvent('checkout.completed', new Date(NOW - 5000));
    const vote = validEvent('poll.voted', new Date(NOW - 5000));
    await post({ events: [purchase, vote] });
    const rows = await stored();
    const savedPurchase = rows.find((r) => r.event === 'checkout.completed')!;
    expect(savedPurchase).toMatchObject({
      eventId: purchase.eventId,
      userId: 'user-42',
      sessionId: purchase.sessionId,
      broadcastId: 'broadcast-1',
      campaignId: 1,
      timestamp: new Date(NOW - 5000).toISOString(),
      receivedAt: new Date(NOW).toISOString(),
      orderId: 'order-1',
      sponsorId: 'sponsor-1',
      total: 99,
      items: purchase.items,
      data: { currency: 'EUR' },
    });
    expect(rows.find((r) => r.event === 'poll.voted')).toMatchObject({ orderId: null, sponsorId: null, items: null, total: null });
  });

  it('rejects each invalid event with its code and stores the valid events of the same batch', async () => {
    const at = new Date(NOW - 1000);
    const good1 = validEvent('poll.voted', at);
    const good2 = validEvent('product.viewed', at);
    const { eventId: _drop, ...noId } = validEvent('broadcast.joined', at);
    const { sessionId: _s, ...missingSession } = validEvent('broadcast.joined', at);
    const batch = [
      good1,
      missingSession,
      validEvent('poll.voted', at, { data: { pollId: 'p', questionText: 'q', optionSelected: 'A', optionIndex: 'zero' } }),
      { ...validEvent('poll.viewed', at), event: 'poll.exploded' },
      validEvent('poll.viewed', new Date(NOW + 2 * 3600_000)),
      validEvent('poll.viewed', new Date(NOW - 8 * 86_400_000)),
      validEvent('poll.viewed', at, { userId: 'jane.doe@example.com' }),
      validEvent('poll.voted', at, { data: { pollId: 'p', questionText: 'Call me on +49 170 1234567', optionSelected: 'A', optionIndex: 0 } }),
      validEvent('poll.viewed', at, { data: { pollId: 'p', questionText: 'x'.repeat(33 * 1024) } }),
      good2,
      validEvent('poll.viewed', at, { userID: 'typo' }),
      noId,
    ];
    const answer = (await post({ events: batch })).json();
    expect(answer.accepted).toBe(3);
    expect(answer.rejected.map((r: { index: number; code: string }) => [r.index, r.code])).toEqual([
      [1, 'missing_field'],
      [2, 'invalid_type'],
      [3, 'unknown_event'],
      [4, 'timestamp_in_future'],
      [5, 'timestamp_too_old'],
      [6, 'pii_detected'],
      [7, 'pii_detected'],
      [8, 'event_too_large'],
      [10, 'unknown_field'],
    ]);
    expect(answer.rejected[0].errors).toContainEqual({ path: '/sessionId', code: 'missing_field', message: 'is required' });
    const rows = await stored();
    expect(rows.map((r) => r.eventId).sort()).toEqual(
      expect.arrayContaining([good1.eventId, good2.eventId].sort() as string[]),
    );
    expect(rows).toHaveLength(3);
    expect(rows.some((r) => r.eventId === undefined)).toBe(false);
    // Every rejected event is in quarantine with the same code and a reason.
    const quarantine = (await t.app.inject({ url: '/v1/rejected-events', headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json().data;
    expect(quarantine.map((r: { code: string }) => r.code).sort()).toEqual(answer.rejected.map((r: { code: string }) => r.code).sort());
    for (const reject of quarantine) expect(reject.detail).toEqual(expect.any(String));
  });

  it('lists quarantined rejects with reasons and never keeps the personal data it refused', async () => {
    const at = new Date(NOW - 1000);
    await post({
      events: [
        validEvent('poll.viewed', at, { userId: 'jane.doe@example.com' }),
        validEvent('poll.voted', at, { data: { pollId: 'p', questionText: 'card 4111 1111 1111 1111', optionSelected: 'A' } }),
        { event: 'nope', userId: '10.0.0.1' },
        validEvent('poll.viewed', at, { data: { pollId: 'p', questionText: 'q', 'key.owner@example.org': 1 } }),
        { ...validEvent('poll.viewed', at), 'field.owner@example.org': 'x' },
      ],
    });
    const response = await t.app.inject({ url: '/v1/rejected-events', headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    expect(response.statusCode).toBe(200);
    const { data } = response.json();
    // Personal data decides the code before the name or the shape: an unknown name or field
    // holding it is refused for the personal data.
    expect(data.map((r: { code: string }) => r.code).sort()).toEqual(Array(5).fill('pii_detected'));
    for (const reject of data) expect(reject.detail).toEqual(expect.any(String));
    const text = JSON.stringify(data);
    expect(text).not.toContain('jane.doe@example.com');
    expect(text).not.toContain('4111 1111 1111 1111');
    expect(text).not.toContain('10.0.0.1');
    expect(text).not.toContain('owner@example.org');
    expect(text).toContain('[redacted]');
  });

  it('pages the quarantine with a cursor', async () => {
    await post({ events: Array.from({ length: 7 }, (_, i) => ({ event: `bad.${i}` })) });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/v1/rejected-events?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await t.app.inject({ url, headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json();
      seen.push(...page.data.map((r: { id: string }) => r.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(7);
  });

  it('corrects client clock skew with sentAt', async () => {
    // The device clock is 10 minutes fast: it stamped the event 10 s before it sent it.
    const deviceNow = NOW + 600_000;
    const event = validEvent('poll.viewed', new Date(deviceNow - 10_000));
    await post({ sentAt: new Date(deviceNow).toISOString(), events: [event] });
    const [row] = await stored();
    expect(row!.timestamp).toBe(new Date(NOW - 10_000).toISOString());
  });

  it('lets a server-to-server sender backfill old events and name the country', async () => {
    const old = validEvent('checkout.completed', new Date(NOW - 30 * 86_400_000), { country: 'FR' });
    const response = await post({ events: [old] }, { 'x-svc-api-key': '', authorization: `Bearer ${t.demo.adminToken}` });
    expect(response.json()).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    expect((await stored())[0]).toMatchObject({ country: 'FR' });
  });

  it('accepts text/plain bodies as sendBeacon sends them, with the key in the query', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: `/v1/events?apiKey=${t.demo.apiKey}`,
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      payload: JSON.stringify(validEvent('broadcast.left', new Date(NOW - 1))),
    });
    expect(response.json()).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  });

  it('assigns an event id when none is sent', async () => {
    const { eventId: _e, ...event } = validEvent('broadcast.joined', new Date(NOW - 1));
    await post(event);
    const [row] = await stored();
    expect(row!.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('fills campaignId from the broadcast registry and registers unknown broadcasts under the default campaign', async () => {
    const at = new Date(NOW - 1);
    await t.app.inject({ method: 'POST', url: '/v1/campaigns', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: { id: 5, name: 'Cup' } });
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: { id: 'cup-final', campaignId: 5 } });
    // Events name campaigns, but the registry decides; a public key creates no campaign.
    await post({ events: [validEvent('broadcast.joined', at, { broadcastId: 'new-show', campaignId: 42 }), validEvent('poll.viewed', at, { broadcastId: 'cup-final', campaignId: 7 })] });
    const rows = await stored();
    expect(rows.find((r) => r.broadcastId === 'new-show')!.campaignId).toBe(1);
    expect(rows.find((r) => r.broadcastId === 'cup-final')!.campaignId).toBe(5);
    const campaigns = (await t.app.inject({ url: '/v1/campaigns', headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json().data;
    expect(campaigns.map((c: { id: number }) => c.id)).toEqual([1, 5]);
  });

  it('answers whole-body problems with problem+json', async () => {
    const cases: Array<[unknown, number, string, Record<string, string>?]> = [
      ['{not json', 400, 'invalid_json'],
      ['[1,2]', 400, 'invalid_body'],
      [{ events: 'nope' }, 400, 'invalid_body'],
      [{ sentAt: 'yesterday', events: [] }, 400, 'validation_failed'],
      [{ events: Array.from({ length: 501 }, () => ({})) }, 413, 'payload_too_large'],
      [JSON.stringify({ events: [{ pad: 'x'.repeat(600 * 1024) }] }), 413, 'payload_too_large'],
      ['<xml/>', 415, 'unsupported_media_type', { 'content-type': 'application/xml' }],
    ];
    for (const [body, status, code, headers] of cases) {
      const response = await post(body, headers);
      expect(response.statusCode, code).toBe(status);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status, code, type: `urn:svc:error:${code}` });
    }
  });

  it('asks for a key, refuses an unknown one and a revoked one', async () => {
    const event = validEvent('broadcast.joined', new Date(NOW - 1));
    expect((await post(event, { 'x-svc-api-key': '' })).json()).toMatchObject({ status: 400, code: 'api_key_missing' });
    expect((await post(event, { 'x-svc-api-key': `svc_pk_${'x'.repeat(32)}` })).json()).toMatchObject({ status: 401, code: 'invalid_api_key' });
    const [key] = await t.services.tenants.listApiKeys(t.demo.seq);
    await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${key!.id}`, headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    expect((await post(event)).json()).toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it('counts accepted, duplicate and rejected events in /metrics', async () => {
    const event = validEvent('broadcast.joined', new Date(NOW - 1));
    await post({ events: [event, event, { event: 'bad' }] });
    const metrics = withoutNodeLabel((await t.app.inject({ url: '/metrics' })).body);
    expect(metrics).toContain('svc_events_accepted_total{source="client"} 1');
    expect(metrics).toContain('svc_events_duplicate_total 1');
    expect(metrics).toContain('svc_events_rejected_total{code="unknown_event"} 1');
    expect(metrics).toMatch(/svc_commit_duration_seconds_count \d+/);
    // The database's memory, so that a soak can tell its cache from a leak.
    expect(Number(/^svc_database_memory_bytes (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
  });
});

describe('POST /v1/events edge cases', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp({ clock: new ManualClock(NOW) });
  });
  afterEach(() => t.close());

  it('refuses control characters in ids and unrepresentable timestamps per event, not with a 500', async () => {
    const at = new Date(NOW - 1000);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-svc-api-key': t.demo.apiKey },
      payload: {
        events: [
          validEvent('poll.viewed', at, { broadcastId: 'b\u0000x' }),
          validEvent('poll.viewed', at, { timestamp: '2026-11-21T11:59:60Z' }),
          validEvent('poll.viewed', at),
        ],
      },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ accepted: 1, rejected: [{ index: 0, code: 'invalid_value' }, { index: 1, code: 'invalid_value' }] });
  });

  it('answers a CORS preflight from any origin for the public routes only', async () => {
    const preflight = (url: string) =>
      t.app.inject({
        method: 'OPTIONS',
        url,
        headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-svc-api-key' },
      });
    const events = await preflight('/v1/events');
    expect(events.statusCode).toBe(204);
    expect(events.headers['access-control-allow-origin']).toBe('*');
    expect(String(events.headers['access-control-allow-headers'])).toContain('x-svc-api-key');
    const admin = await preflight('/v1/settings');
    expect(admin.headers['access-control-allow-origin']).toBeUndefined();
  });
});
