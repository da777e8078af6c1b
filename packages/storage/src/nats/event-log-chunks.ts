import { createHash } from 'node:crypto';
import { eventKey, type NewDelivery } from '../event-store';
import type { EventRow, QuarantineRow } from '../records';
import { encodeEvents, type EncodedEvents } from '../encoded-events';
import { insertLine } from '../clickhouse/event-sql';

/** What one message of the EVENTS stream carries: rows of one tenant. */
export interface EventLogEntry {
  /** The events, as the lines the event database inserts (one block per tenant). */
  events: EncodedEvents[];
  rejects: QuarantineRow[];
  /** Webhook deliveries of these events (or of events of the message just before, see chunkEntries). */
  deliveries: NewDelivery[];
}

/** One message to publish. */
export interface EventLogChunk {
  tenantSeq: number;
  /** `Nats-Msg-Id`: the same rows give the same id, so a retried publish is dropped by the stream. */
  msgId: string;
  body: Uint8Array;
  /** `eventKey` of each event in the chunk. */
  keys: string[];
  /** The id of each event in the chunk, as in `keys`. */
  ids: string[];
}

/**
 * The start of a body of the current format: a header line (JSON: tenant, the events' ids, users
 * and receipt times, the rejects and deliveries), then one line per event as `insertLine` writes
 * it, each ending with a newline. Bodies of the first format (one JSON object with the events
 * as rows, `{"events":[…`) may still wait in a stream after an upgrade: both are read.
 */
const HEADER_START = '{"v":2,';
/** Bytes of the header's frame around its items, and slack. */
const FRAME_BYTES = 128;
/** Bytes an event adds to the header besides its user: its id, receipt time, quotes and commas. */
const EVENT_HEADER_BYTES = 64;

type Item =
  | { kind: 'events'; id: string; text: string; key: string; event: EventRow }
  | { kind: 'rejects' | 'deliveries'; id: string; text: string };

/**
 * Splits rows into messages, one tenant each, whose bodies stay under `maxBodyBytes`. Each
 * event is followed by its deliveries, so they nearly always share its message; when a message
 * fills up between them, the rest go into the next one (the writer handles messages in stream
 * order, and a delivery enqueued twice is dropped by its id). Deterministic: the same rows in
 * the same order give the same chunks and ids.
 */
export function chunkEntries(
  rows: { events: EventRow[]; keys: string[]; rejects: QuarantineRow[]; deliveries: NewDelivery[] },
  maxBodyBytes: number,
): EventLogChunk[] {
  const perTenant = new Map<number, Item[]>();
  const itemsOf = (tenantSeq: number): Item[] => {
    let items = perTenant.get(tenantSeq);
    if (!items) perTenant.set(tenantSeq, (items = []));
    return items;
  };
  const deliveriesOf = new Map<string, NewDelivery[]>();
  for (const d of rows.deliveries) {
    const key = eventKey(d.tenantSeq, d.eventId);
    const list = deliveriesOf.get(key);
    if (list) list.push(d);
    else deliveriesOf.set(key, [d]);
  }
  const delivery = (d: NewDelivery): Item => ({ kind: 'deliveries', id: `d:${d.endpointId}:${d.eventId.toLowerCase()}`, text: JSON.stringify(d) });
  rows.events.forEach((event, i) => {
    const key = rows.keys[i]!;
    const items = itemsOf(event.tenantSeq);
    items.push({ kind: 'events', id: `e:${event.eventId.toLowerCase()}`, text: insertLine(event), key, event });
    if (deliveriesOf.size === 0) return;
    for (const d of deliveriesOf.get(key) ?? []) items.push(delivery(d));
    deliveriesOf.delete(key);
  });
  // Deliveries of events not in this batch: none come from ingest, kept rather than lost.
  for (const list of deliveriesOf.values()) for (const d of list) itemsOf(d.tenantSeq).push(delivery(d));
  for (const r of rows.rejects) itemsOf(r.tenantSeq).push({ kind: 'rejects', id: `r:${r.id.toLowerCase()}`, text: JSON.stringify(r) });

  const chunks: EventLogChunk[] = [];
  for (const [tenantSeq, items] of perTenant) {
    let current: Item[] = [];
    let bytes = FRAME_BYTES;
    for (const item of items) {
      const size = itemBytes(item);
      if (FRAME_BYTES + size > maxBodyBytes) throw new Error(`A row of ${size} bytes does not fit in a message of at most ${maxBodyBytes} bytes.`);
      if (bytes + size > maxBodyBytes) {
        chunks.push(toChunk(tenantSeq, current));
        current = [];
        bytes = FRAME_BYTES;
      }
      current.push(item);
      bytes += size;
    }
    if (current.length) chunks.push(toChunk(tenantSeq, current));
  }
  return chunks;
}

/** Bytes an item takes in a body, at most (a user id's character is at most 6 bytes in JSON). */
function itemBytes(item: Item): number {
  const text = Buffer.byteLength(item.text) + 1;
  if (item.kind !== 'events') return text;
  return text + EVENT_HEADER_BYTES + (item.event.userId === null ? 0 : item.event.userId.length * 6);
}

function toChunk(tenantSeq: number, items: Item[]): EventLogChunk {
  // The id is the hash of the tenant and every item's id, one per line: hashed as one text,
  // since an update per item cost more than the hashing.
  let named = `svc.events ${tenantSeq}`;
  let lines = '';
  let rejects = '';
  let deliveries = '';
  const ids: string[] = [];
  const users: (string | null)[] = [];
  const received: number[] = [];
  const keys: string[] = [];
  for (const item of items) {
    named += `\n${item.id}`;
    if (item.kind === 'events') {
      lines += `${item.text}\n`;
      ids.push(item.event.eventId);
      users.push(item.event.userId);
      received.push(item.event.receivedAtMs);
      keys.push(item.key);
    } else if (item.kind === 'rejects') rejects += rejects ? `,${item.text}` : item.text;
    else deliveries += deliveries ? `,${item.text}` : item.text;
  }
  const header = `${HEADER_START}"tenantSeq":${tenantSeq},"ids":${JSON.stringify(ids)},"users":${JSON.stringify(users)},"received":[${received.join(',')}],"rejects":[${rejects}],"deliveries":[${deliveries}]}`;
  const msgId = createHash('sha256').update(named).digest('hex');
  return { tenantSeq, msgId, body: Buffer.from(`${header}\n${lines}`), keys, ids };
}

interface Header {
  tenantSeq: number;
  ids: string[];
  users: (string | null)[];
  received: number[];
  rejects: QuarantineRow[];
  deliveries: NewDelivery[];
}

/** The newest body format this version reads (the `v` of HEADER_START). */
export const EVENT_LOG_FORMAT_VERSION = 2;
/** How a versioned body starts: `{"v":` and the version's digits. */
const VERSIONED_START = /^\{"v":(\d{1,9}),/;

/**
 * A body a newer version of the service wrote, in a format this one does not know: it is not
 * broken, only early (during a rolling upgrade), and a writer of that version will store it.
 */
export class NewerEventLogFormatError extends Error {
  constructor(readonly version: number) {
    super(`An EVENTS message is of format ${version}; this version reads formats up to ${EVENT_LOG_FORMAT_VERSION}.`);
    this.name = 'NewerEventLogFormatError';
  }
}

/**
 * The rows of a message body written by `chunkEntries`, of either format; throws
 * NewerEventLogFormatError for a body of a later format, and another error when it is neither.
 */
export function decodeEntry(body: Uint8Array): EventLogEntry {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (bytes.toString('latin1', 0, HEADER_START.length) !== HEADER_START) {
    const version = VERSIONED_START.exec(bytes.toString('latin1', 0, 16));
    if (version && Number(version[1]) > EVENT_LOG_FORMAT_VERSION) throw new NewerEventLogFormatError(Number(version[1]));
    return decodeFirstFormat(bytes);
  }
  const end = bytes.indexOf(0x0a);
  if (end < 0) throw new Error('An EVENTS message lacks the end of its header.');
  const header = JSON.parse(bytes.toString('utf8', 0, end)) as Partial<Header>;
  const { tenantSeq, ids, users, received, rejects, deliveries } = header;
  if (typeof tenantSeq !== 'number' || !Array.isArray(ids) || !Array.isArray(users) || !Array.isArray(received) || !Array.isArray(rejects) || !Array.isArray(deliveries)) {
    throw new Error('An EVENTS message lacks its tenant, events, rejects or deliveries.');
  }
  if (users.length !== ids.length || received.length !== ids.length) throw new Error('An EVENTS message has not as many users and receipt times as events.');
  const lines = bytes.subarray(end + 1);
  if (lineCount(lines) !== ids.length) throw new Error(`An EVENTS message has not one line per event (${ids.length} ids).`);
  const events = ids.length ? [{ tenantSeq, ids, users, received, lines }] : [];
  return { events, rejects, deliveries };
}

/** The lines of a block that ends with a newline (or is empty); -1 when text follows the last newline. */
function lineCount(lines: Buffer): number {
  let count = 0;
  let at = 0;
  for (let end = lines.indexOf(0x0a); end >= 0; end = lines.indexOf(0x0a, at)) {
    count++;
    at = end + 1;
  }
  return at === lines.length ? count : -1;
}

/** A body of the first format: `{"events":[rows],"rejects":[…],"deliveries":[…]}`. */
function decodeFirstFormat(bytes: Buffer): EventLogEntry {
  const parsed = JSON.parse(bytes.toString('utf8')) as { events?: EventRow[]; rejects?: QuarantineRow[]; deliveries?: NewDelivery[] };
  if (!Array.isArray(parsed.events) || !Array.isArray(parsed.rejects) || !Array.isArray(parsed.deliveries)) {
    throw new Error('An EVENTS message lacks its events, rejects or deliveries.');
  }
  return { events: encodeEvents(parsed.events), rejects: parsed.rejects, deliveries: parsed.deliveries };
}
