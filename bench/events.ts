import { uuidv7 } from 'uuidv7';

/**
 * Request bodies for the ingest benchmark, built by string templating before the timed phase.
 * Mostly poll.voted, with a few other engagement and commerce events so that several
 * validators and the commerce columns are exercised. Every event id is a fresh UUIDv7.
 */

const USERS = 50_000;
const BROADCASTS = 4;

/** Which template each of the 100 slots of a batch uses: 80 votes, then a mix. */
const MIX: ((i: number, ts: string) => string)[] = [
  ...Array.from({ length: 80 }, () => pollVoted),
  ...Array.from({ length: 6 }, () => pollViewed),
  ...Array.from({ length: 5 }, () => broadcastJoined),
  ...Array.from({ length: 4 }, () => productViewed),
  ...Array.from({ length: 3 }, () => cartItemAdded),
  ...Array.from({ length: 2 }, () => checkoutCompleted),
];

function envelope(name: string, i: number, ts: string): string {
  const user = i % USERS;
  return (
    `"event":"${name}","eventId":"${uuidv7()}","userId":"user-${user}","sessionId":"svc_01JBENCH${user.toString(36).padStart(6, '0')}",` +
    `"broadcastId":"b-${(i % BROADCASTS) + 1}","timestamp":"${ts}"`
  );
}

function pollVoted(i: number, ts: string): string {
  const option = i % 4;
  return `{${envelope('poll.voted', i, ts)},"data":{"pollId":"p${i % 20}","questionText":"Who wins?","optionSelected":"${'ABCD'[option]}","optionIndex":${option}}}`;
}

function pollViewed(i: number, ts: string): string {
  return `{${envelope('poll.viewed', i, ts)},"data":{"pollId":"p${i % 20}","questionText":"Who wins?"}}`;
}

function broadcastJoined(i: number, ts: string): string {
  return `{${envelope('broadcast.joined', i, ts)},"data":{}}`;
}

function productViewed(i: number, ts: string): string {
  return `{${envelope('product.viewed', i, ts)},"sponsorId":"sp-1","data":{"productId":"prod-${i % 50}","placement":"carousel"}}`;
}

function cartItemAdded(i: number, ts: string): string {
  return `{${envelope('cart.item_added', i, ts)},"sponsorId":"sp-1","data":{"productId":"prod-${i % 50}","quantity":1}}`;
}

function checkoutCompleted(i: number, ts: string): string {
  return (
    `{${envelope('checkout.completed', i, ts)},"orderId":"order-${i}","sponsorId":"sp-1",` +
    `"items":[{"productId":"prod-${i % 50}","name":"Team scarf","quantity":2,"unitPrice":19.5,"currency":"EUR"}],"total":39,` +
    `"data":{"currency":"EUR"}}`
  );
}

export const EVENTS_PER_BATCH = MIX.length;

let sequence = 0;

/** One request body of EVENTS_PER_BATCH events with new ids, timestamped now. */
export function makeBody(): Buffer {
  const ts = new Date().toISOString();
  const events: string[] = new Array<string>(MIX.length);
  for (let slot = 0; slot < MIX.length; slot++) events[slot] = MIX[slot]!(sequence++, ts);
  return Buffer.from(`{"sentAt":"${ts}","events":[${events.join(',')}]}`);
}

/** `count` bodies, each with unique event ids. */
export function makeBodies(count: number): Buffer[] {
  const bodies: Buffer[] = new Array<Buffer>(count);
  for (let i = 0; i < count; i++) bodies[i] = makeBody();
  return bodies;
}
