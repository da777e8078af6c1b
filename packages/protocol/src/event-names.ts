/** Engagement events of spec section 6.1. */
export const ENGAGEMENT_EVENTS = [
  'broadcast.joined',
  'broadcast.left',
  'poll.viewed',
  'poll.voted',
  'contest.viewed',
  'contest.entered',
  'lineup.viewed',
  'sponsor_moment.viewed',
  'sponsor_moment.tapped',
] as const;

/** Commerce events of spec section 6.2: they always carry orderId, sponsorId, items and total. */
export const COMMERCE_EVENTS = [
  'product.viewed',
  'product.tapped',
  'cart.item_added',
  'cart.item_removed',
  'checkout.started',
  'checkout.completed',
  'checkout.abandoned',
] as const;

export const EVENT_NAMES = [...ENGAGEMENT_EVENTS, ...COMMERCE_EVENTS] as const;

export type EngagementEventName = (typeof ENGAGEMENT_EVENTS)[number];
export type CommerceEventName = (typeof COMMERCE_EVENTS)[number];
export type EventName = (typeof EVENT_NAMES)[number];

const EVENT_NAME_SET: ReadonlySet<string> = new Set(EVENT_NAMES);
const COMMERCE_EVENT_SET: ReadonlySet<string> = new Set(COMMERCE_EVENTS);

export function isEventName(value: unknown): value is EventName {
  return typeof value === 'string' && EVENT_NAME_SET.has(value);
}

export function isCommerceEvent(name: string): name is CommerceEventName {
  return COMMERCE_EVENT_SET.has(name);
}
