import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVENT_NAMES, findPii, isCommerceEvent, isErrorCode, type EventName } from '@svc/protocol';
import { EventValidator } from '../src/event-validator';

const validator = new EventValidator();

/** Strings that have broken exporters, databases and pages elsewhere; valid ids all the same. */
const HOSTILE = [
  "'; DROP TABLE events; --",
  '" OR 1=1 --',
  '=HYPERLINK("http://x.test","click")',
  '+SUM(A1:A9)',
  '-2+3',
  '@SUM(1)',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  '../../etc/passwd',
  '%00%2e%2e',
  '\u2028\u2029',
  '\ufeff',
  '😀👩‍👩‍👧',
  'a,b;c"d',
];
const CONTROL = /[\u0000-\u001f\u007f]/;
const codePoints = (s: string) => [...s].length;
const noPii = (value: unknown) => findPii(value).length === 0;

const anyText = (maxUnits: number) =>
  fc.string({ unit: fc.oneof({ weight: 4, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) }, fc.constantFrom(...HOSTILE)), minLength: 1, maxLength: maxUnits });
/** An identifier the contract accepts: printable, 1–128 characters, nothing that looks like personal data. */
const idArb = anyText(12).filter((s) => !CONTROL.test(s) && codePoints(s) <= 128 && noPii(s));
const textArb = anyText(40).filter((s) => codePoints(s) <= 1_000 && noPii(s));
const currencyArb = fc.stringMatching(/^[A-Z]{3}$/);
const customContext = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }).filter(noPii);

const DATA: Record<EventName, fc.Arbitrary<Record<string, unknown>>> = {
  'broadcast.joined': fc.constant({}),
  'broadcast.left': fc.record({ reason: fc.constantFrom('closed', 'timeout', 'disconnect'), watchedMs: fc.nat() }),
  'poll.viewed': fc.record({ pollId: idArb, questionText: textArb }),
  'poll.voted': fc.record({ pollId: idArb, questionText: textArb, optionSelected: textArb, optionIndex: fc.integer({ min: 0, max: 99 }) }),
  'contest.viewed': fc.record({ contestId: idArb, title: textArb }),
  'contest.entered': fc.record({ contestId: idArb, title: textArb }),
  'lineup.viewed': fc.record({ lineupId: idArb }),
  'sponsor_moment.viewed': fc.record({ momentId: idArb, sponsorId: idArb }),
  'sponsor_moment.tapped': fc.record({ momentId: idArb, sponsorId: idArb }),
  'product.viewed': fc.record({ productId: idArb, placement: fc.constantFrom('carousel', 'banner') }),
  'product.tapped': fc.record({ productId: idArb }),
  'cart.item_added': fc.record({ productId: idArb, quantity: fc.integer({ min: 1, max: 10_000 }) }),
  'cart.item_removed': fc.record({ productId: idArb, quantity: fc.integer({ min: 1, max: 10_000 }) }),
  'checkout.started': fc.constant({}),
  'checkout.completed': fc.record({ currency: currencyArb }),
  'checkout.abandoned': fc.record({ step: fc.constantFrom('cart', 'details', 'payment') }, { requiredKeys: [] }),
};

const lineItem = fc.record(
  {
    productId: idArb,
    name: textArb,
    quantity: fc.integer({ min: 1, max: 10_000 }),
    unitPrice: fc.double({ min: 0, max: 1e9, noNaN: true }),
    currency: currencyArb,
  },
  { requiredKeys: ['productId', 'quantity', 'unitPrice', 'currency'] },
);

/** A valid event of one type, with every optional field present or not. */
function validEventOf(name: EventName): fc.Arbitrary<Record<string, unknown>> {
  const commerce = isCommerceEvent(name);
  const completed = name === 'checkout.completed';
  const required = ['event', 'sessionId', 'broadcastId', 'timestamp', 'data', ...(completed ? ['orderId', 'items', 'total'] : [])];
  return fc.record<Record<string, unknown>>(
    {
      event: fc.constant(name),
      eventId: fc.uuid(),
      userId: fc.option(idArb, { nil: null }),
      sessionId: fc.stringMatching(/^[0-9A-Za-z_-]{1,64}$/).map((s) => `svc_${s}`),
      broadcastId: idArb,
      campaignId: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      timestamp: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
      country: fc.option(fc.stringMatching(/^[A-Z]{2}$/), { nil: null }),
      // Custom context rides along with the documented fields.
      data: fc.tuple(customContext, DATA[name]).map(([extra, fields]) => ({ ...extra, ...fields })),
      ...(commerce
        ? {
            orderId: completed ? idArb : fc.option(idArb, { nil: null }),
            sponsorId: fc.option(idArb, { nil: null }),
            items: fc.array(lineItem, { maxLength: 4 }),
            total: fc.double({ min: 0, max: 1e12, noNaN: true }),
          }
        : {}),
    },
    { requiredKeys: required },
  );
}

const anyValidEvent = fc.constantFrom(...EVENT_NAMES).chain(validEventOf);

/** A change that makes a valid event invalid, and the code the contract gives for it. */
interface Mutation {
  name: string;
  apply(event: Record<string, unknown>): unknown;
  code: string;
}

const MUTATIONS: Mutation[] = [
  { name: 'drops sessionId', apply: ({ sessionId: _, ...rest }) => rest, code: 'missing_field' },
  { name: 'drops data', apply: ({ data: _, ...rest }) => rest, code: 'missing_field' },
  { name: 'drops the event name', apply: ({ event: _, ...rest }) => rest, code: 'missing_field' },
  { name: 'adds an unknown field', apply: (e) => ({ ...e, surprise: 1 }), code: 'unknown_field' },
  { name: 'renames the event', apply: (e) => ({ ...e, event: `${String(e.event)}.x` }), code: 'unknown_event' },
  { name: 'numbers the sessionId', apply: (e) => ({ ...e, sessionId: 42 }), code: 'invalid_type' },
  { name: 'makes data an array', apply: (e) => ({ ...e, data: [] }), code: 'invalid_type' },
  { name: 'puts a line break in broadcastId', apply: (e) => ({ ...e, broadcastId: 'a\nb' }), code: 'invalid_value' },
  { name: 'lengthens userId past 128', apply: (e) => ({ ...e, userId: 'u'.repeat(129) }), code: 'invalid_value' },
  { name: 'breaks the timestamp', apply: (e) => ({ ...e, timestamp: 'yesterday' }), code: 'invalid_value' },
  { name: 'breaks the eventId', apply: (e) => ({ ...e, eventId: 'not-a-uuid' }), code: 'invalid_value' },
  { name: 'lowercases the country', apply: (e) => ({ ...e, country: 'de' }), code: 'invalid_value' },
  { name: 'puts an e-mail address in data', apply: (e) => ({ ...e, data: { ...(e.data as object), note: 'ann@example.com' } }), code: 'pii_detected' },
  { name: 'puts a card number in userId', apply: (e) => ({ ...e, userId: '4111 1111 1111 1111' }), code: 'pii_detected' },
  { name: 'puts an IP address in a data key', apply: (e) => ({ ...e, data: { ...(e.data as object), '10.1.2.3': true } }), code: 'pii_detected' },
];

describe('event validation (properties)', () => {
  it('accepts every generated valid event of each type', () => {
    fc.assert(
      fc.property(anyValidEvent, (event) => {
        const outcome = validator.validate(event);
        expect(outcome, JSON.stringify(outcome)).toEqual({ ok: true, event: event.event });
      }),
      { numRuns: 300 },
    );
  });

  it('rejects each mutation of a valid event with its catalogue code, listing the field', () => {
    fc.assert(
      fc.property(anyValidEvent, fc.constantFrom(...MUTATIONS), (event, mutation) => {
        const outcome = validator.validate(mutation.apply(event));
        expect(outcome.ok, mutation.name).toBe(false);
        if (outcome.ok) return;
        expect(outcome.code, `${mutation.name}: ${outcome.detail}`).toBe(mutation.code);
        expect(isErrorCode(outcome.code)).toBe(true);
        expect(outcome.errors.length).toBeGreaterThan(0);
      }),
      { numRuns: 600 },
    );
  });

  it('never throws on any JSON value and answers only catalogue codes', () => {
    const anyJson = fc.oneof(
      fc.jsonValue({ maxDepth: 6 }),
      fc.anything({ maxDepth: 4, withNullPrototype: true, withBigInt: true, withDate: true, withMap: true, withTypedArray: true }),
      // A valid event with one value anywhere in it replaced by anything.
      fc.tuple(anyValidEvent, fc.string(), fc.jsonValue({ maxDepth: 3 })).map(([event, key, value]) => {
        const keys = Object.keys(event);
        const target = keys[Math.abs(hash(key)) % keys.length]!;
        return { ...event, [target]: value };
      }),
    );
    fc.assert(
      fc.property(anyJson, (value) => {
        const outcome = validator.validate(value);
        if (!outcome.ok) {
          expect(isErrorCode(outcome.code), outcome.code).toBe(true);
          for (const error of outcome.errors) expect(isErrorCode(error.code), error.code).toBe(true);
        }
      }),
      { numRuns: 1_000 },
    );
  });
});

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) | 0;
  return h;
}
