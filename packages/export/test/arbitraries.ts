import fc from 'fast-check';
import { COMMERCE_EVENTS, EVENT_NAMES, type StoredEvent } from '@svc/protocol';

/** Fragments that break naive CSV and line-based readers, and spreadsheet formulas. */
const HOSTILE = ['"', '""', ',', '\r', '\n', '\r\n', '\u2028', '\u0085', '=1+1', '+cmd', '-1', '@SUM(A1)', "'; DROP TABLE events; --", '\t', ' ', '\u0000', '😀', 'é'];

export const field = fc.string({ unit: fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), minLength: 1, maxLength: 20 });
const iso = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
const money = fc.integer({ min: 0, max: 1e12 }).map((cents) => cents / 100);
const data = fc.dictionary(field, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });

export const storedEvent: fc.Arbitrary<StoredEvent> = fc
  .record({
    eventId: fc.uuid(),
    event: fc.constantFrom(...EVENT_NAMES),
    userId: fc.option(field, { nil: null }),
    sessionId: field,
    broadcastId: field,
    campaignId: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    timestamp: iso,
    receivedAt: iso,
    country: fc.option(fc.stringMatching(/^[A-Z]{2}$/), { nil: null }),
    data,
    orderId: fc.option(field, { nil: null }),
    sponsorId: fc.option(field, { nil: null }),
    items: fc.option(fc.array(fc.record({ productId: field, name: field, quantity: fc.integer({ min: 1, max: 10_000 }), unitPrice: money, currency: fc.constantFrom('EUR', 'USD') }), { maxLength: 3 }), { nil: null }),
    total: fc.option(money, { nil: null }),
  })
  // Only commerce events carry the commerce fields (as stored).
  .map((e) => ((COMMERCE_EVENTS as readonly string[]).includes(e.event) ? e : { ...e, orderId: null, sponsorId: null, items: null, total: null }));

