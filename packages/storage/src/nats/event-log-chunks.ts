import { createHash } from 'node:crypto';
import { eventKey, type NewDelivery } from '../event-store';
import type { EventRow, QuarantineRow } from '../records';

/** What one message of the EVENTS stream carries: rows of one tenant. */
export interface EventLogEntry {
  events: EventRow[];
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
}

/** Bytes of the body's frame around its items (`{"events":[],"rejects":[],"deliveries":[]}` and slack). */
const FRAME_BYTES = 64;

type Item = { kind: 'events'; id: string; text: string; key?: string } | { kind: 'rejects' | 'deliveries'; id: string; text: string };

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
    items.push({ kind: 'events', id: `e:${event.eventId.toLowerCase()}`, text: JSON.stringify(event), key });
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
      const size = Buffer.byteLength(item.text) + 1;
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

function toChunk(tenantSeq: number, items: Item[]): EventLogChunk {
  const hash = createHash('sha256').update(`svc.events ${tenantSeq}`);
  const texts: Record<Item['kind'], string[]> = { events: [], rejects: [], deliveries: [] };
  const keys: string[] = [];
  for (const item of items) {
    hash.update(`\n${item.id}`);
    texts[item.kind].push(item.text);
    if (item.kind === 'events') keys.push(item.key!);
  }
  const body = `{"events":[${texts.events.join(',')}],"rejects":[${texts.rejects.join(',')}],"deliveries":[${texts.deliveries.join(',')}]}`;
  return { tenantSeq, msgId: hash.digest('hex'), body: Buffer.from(body), keys };
}

/** The rows of a message body written by `chunkEntries`. */
export function decodeEntry(body: Uint8Array): EventLogEntry {
  const parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')) as Partial<EventLogEntry>;
  if (!Array.isArray(parsed.events) || !Array.isArray(parsed.rejects) || !Array.isArray(parsed.deliveries)) {
    throw new Error('An EVENTS message lacks its events, rejects or deliveries.');
  }
  return { events: parsed.events, rejects: parsed.rejects, deliveries: parsed.deliveries };
}
