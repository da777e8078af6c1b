import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLOSE_CODES, MAX_EVENT_DEPTH } from '@svc/protocol';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer } from './ws-client';

/** `leaf` inside `levels` nested objects under `key`. */
function nested(levels: number, leaf: unknown, key = 'a'): Record<string, unknown> {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { [key]: value };
  return value as Record<string, unknown>;
}

const PERSONAL = {
  email: 'jane.doe@example.com',
  ip: '10.20.30.40',
  phone: '01701234567',
};

/**
 * The outside tester's attacks on the privacy guard, replayed over real HTTP and WebSocket:
 * each personal value must be refused, and found neither in the export, nor in the broadcast
 * registry, nor unmasked in the quarantine.
 */
describe('privacy guard at the edge', () => {
  let t: TestApp;
  const viewers: TestViewer[] = [];
  beforeEach(async () => {
    t = await startTestApp({ listen: true });
  });
  afterEach(async () => {
    for (const viewer of viewers.splice(0)) viewer.ws.terminate();
    await t.close();
  });

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  const post = async (events: unknown[]) => {
    const response = await fetch(`${t.url}/v1/events`, {
      method: 'POST',
      headers: { 'x-svc-api-key': t.demo.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as { accepted: number; rejected: Array<{ index: number; code: string; detail: string; errors?: unknown[] }> };
  };
  const getText = async (path: string) => {
    const response = await fetch(`${t.url}${path}`, { headers: admin() });
    expect(response.status).toBe(200);
    return response.text();
  };
  /** Everything the service shows of what it stored: the export, the broadcast registry, the quarantine. */
  const everythingShown = async () =>
    [
      await getText('/v1/analytics/events?format=ndjson&from=2000-01-01&to=2100-01-01'),
      await getText('/v1/broadcasts'),
      await getText('/v1/rejected-events?limit=100'),
    ].join('\n');
  const expectNowhere = async (...values: string[]) => {
    const shown = await everythingShown();
    for (const value of values) expect(shown, value).not.toContain(value);
  };

  it('refuses an e-mail nested deeper than the guard reads, and an IP address as a key at depth 40', async () => {
    const now = new Date();
    // `data` is level 2 of the event: MAX_EVENT_DEPTH levels below it are one too many.
    const deepEmail = validEvent('poll.viewed', now, { data: { pollId: 'p', questionText: 'q', extra: nested(MAX_EVENT_DEPTH, 'deep.jane@example.com') } });
    const deepKey = validEvent('poll.viewed', now, { data: { pollId: 'p', questionText: 'q', extra: nested(37, { '10.9.8.7': 'x' }) } });
    // At the last level read, the guard still finds the e-mail.
    const readable = validEvent('poll.viewed', now, { data: { pollId: 'p', questionText: 'q', extra: nested(MAX_EVENT_DEPTH - 3, 'edge.jane@example.com') } });
    const answer = await post([deepEmail, deepKey, readable]);
    expect(answer.accepted).toBe(0);
    expect(answer.rejected.map((r) => [r.index, r.code])).toEqual([
      [0, 'validation_failed'],
      [1, 'validation_failed'],
      [2, 'pii_detected'],
    ]);
    await expectNowhere('deep.jane@example.com', '10.9.8.7', 'edge.jane@example.com');
  });

  it.each(Object.entries(PERSONAL))('refuses a broadcastId holding an %s, and registers no such broadcast', async (_kind, value) => {
    const answer = await post([validEvent('broadcast.joined', new Date(), { broadcastId: value }), validEvent('broadcast.joined', new Date(), { broadcastId: 'clean-1' })]);
    expect(answer.rejected).toMatchObject([{ index: 0, code: 'pii_detected', errors: [{ path: '/broadcastId' }] }]);
    expect(answer.accepted).toBe(1);
    const broadcasts = await getText('/v1/broadcasts');
    expect(broadcasts).toContain('clean-1');
    await expectNowhere(value);
  });

  it('refuses personal data in every identifier field: orderId, sponsorId, product ids, keys', async () => {
    const now = new Date();
    const answer = await post([
      validEvent('checkout.completed', now, { orderId: '030 12345678' }),
      validEvent('checkout.completed', now, { sponsorId: '+49 (0)151 23456789' }),
      validEvent('product.viewed', now, { data: { productId: 'jane＠example.com', placement: 'carousel' } }),
      validEvent('checkout.completed', now, { items: [{ productId: '٠١٧٠١٢٣٤٥٦٧', quantity: 1, unitPrice: 1, currency: 'EUR' }], total: 1 }),
      validEvent('poll.viewed', now, { data: { pollId: 'p', questionText: 'q', ['１９２．１６８．１．２０']: 1 } }),
      validEvent('poll.viewed', now, { data: { pollId: 'p', questionText: 'ring me: ०१७०१२३४५६७' } }),
    ]);
    expect(answer.accepted).toBe(0);
    expect(answer.rejected.map((r) => r.code)).toEqual(Array(6).fill('pii_detected'));
    await expectNowhere('12345678', '23456789', 'jane', '٠١٧٠١٢٣٤٥٦٧', '１９２．１６８．１．２０', '०१७०१२३४५६७');
  });

  it('keeps an unknown event name that is an e-mail only masked in the quarantine', async () => {
    const answer = await post([{ ...validEvent('poll.viewed', new Date()), event: 'pii.evname@example.com' }]);
    expect(answer.rejected).toMatchObject([{ index: 0, code: 'pii_detected' }]);
    expect(JSON.stringify(answer)).not.toContain('evname');
    const quarantine = JSON.parse(await getText('/v1/rejected-events')) as { data: Array<Record<string, unknown>> };
    expect(quarantine.data).toHaveLength(1);
    expect(quarantine.data[0]!.event).toBe('[redacted]');
    expect(JSON.stringify(quarantine)).not.toContain('evname');
  });

  it('masks the event name in the quarantine whatever the rejection, even when the event is too large to read', async () => {
    const huge = { ...validEvent('poll.viewed', new Date()), event: 'pii.evname@example.com', padding: 'x'.repeat(40 * 1024) };
    const answer = await post([huge]);
    expect(answer.rejected).toMatchObject([{ index: 0, code: 'event_too_large' }]);
    await expectNowhere('evname');
  });

  it.each(Object.entries(PERSONAL))('closes a WebSocket whose contentId holds an %s before any broadcast is registered', async (_kind, contentId) => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_01JD4W3G6QZ5K7M8N9P0R1S2T3', contentId });
    viewers.push(viewer);
    expect(await viewer.closed).toEqual({ code: CLOSE_CODES.badRequest, reason: 'invalid_content_id' });
    await expectNowhere(contentId);
  });

  it('refuses a tracked event whose broadcastId holds a phone number over WebSocket', async () => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_01JD4W3G6QZ5K7M8N9P0R1S2T3', contentId: 'match-1' });
    viewers.push(viewer);
    await viewer.next((m) => m.type === 'welcome');
    const { eventId: _id, sessionId: _s, ...event } = validEvent('poll.viewed', new Date(), { broadcastId: '030 12345678' });
    const ack = await viewer.request({ type: 'track', events: [event] });
    expect(ack).toMatchObject({ type: 'ack', ids: [], rejected: [{ index: 0, code: 'pii_detected' }] });
    await expectNowhere('030 12345678');
  });
});
