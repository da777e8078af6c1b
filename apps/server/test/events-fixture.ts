import { uuidv7 } from 'uuidv7';
import { EVENT_NAMES, type EventName } from '@svc/protocol';

const DATA: Record<EventName, Record<string, unknown>> = {
  'broadcast.joined': {},
  'broadcast.left': { reason: 'closed', watchedMs: 120_000 },
  'poll.viewed': { pollId: 'poll-1', questionText: 'Who wins tonight?' },
  'poll.voted': { pollId: 'poll-1', questionText: 'Who wins tonight?', optionSelected: 'Team A', optionIndex: 0 },
  'contest.viewed': { contestId: 'contest-1', title: 'Win a jersey' },
  'contest.entered': { contestId: 'contest-1', title: 'Win a jersey' },
  'lineup.viewed': { lineupId: 'lineup-1' },
  'sponsor_moment.viewed': { momentId: 'moment-1', sponsorId: 'sponsor-1' },
  'sponsor_moment.tapped': { momentId: 'moment-1', sponsorId: 'sponsor-1' },
  'product.viewed': { productId: 'sku-1', placement: 'carousel' },
  'product.tapped': { productId: 'sku-1' },
  'cart.item_added': { productId: 'sku-1', quantity: 2 },
  'cart.item_removed': { productId: 'sku-1', quantity: 1 },
  'checkout.started': {},
  'checkout.completed': { currency: 'EUR' },
  'checkout.abandoned': { step: 'payment' },
};

const COMMERCE = {
  orderId: 'order-1',
  sponsorId: 'sponsor-1',
  items: [{ productId: 'sku-1', name: 'Jersey, "home" édition', quantity: 2, unitPrice: 49.5, currency: 'EUR' }],
  total: 99,
};

/** A valid event of the given type, timestamped `at`. */
export function validEvent(event: EventName, at: Date, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const commerce = event.startsWith('product.') || event.startsWith('cart.') || event.startsWith('checkout.');
  return {
    event,
    eventId: uuidv7(),
    userId: 'user-42',
    sessionId: 'svc_01JD4W3G6QZ5K7M8N9P0R1S2T3',
    broadcastId: 'broadcast-1',
    timestamp: at.toISOString(),
    data: DATA[event],
    ...(commerce ? COMMERCE : {}),
    ...overrides,
  };
}

/** One valid event of each of the 16 types. */
export function allEventTypes(at: Date): Record<string, unknown>[] {
  return EVENT_NAMES.map((name) => validEvent(name, at));
}
