import { eventKey } from './event-store';
import type { EventRow, QuarantineRow } from './records';
import { insertLine } from './clickhouse/event-sql';

const NEWLINE = 0x0a;

/**
 * Events of one tenant already encoded as the rows the event database inserts (ClickHouse's
 * JSONEachRow lines, see `toInsertRow`), with the few fields the writer decides on read apart:
 * so that the writer passes the lines on without parsing and writing every event again.
 */
export interface EncodedEvents {
  tenantSeq: number;
  /** Event ids, in the order of the lines. */
  ids: string[];
  /** Each event's user (for erasure), or null. */
  users: (string | null)[];
  /** Each event's `receivedAtMs`. */
  received: number[];
  /** The events' lines, each ending with `\n` (JSON text holds no raw newline), in the order of `ids`. */
  lines: Uint8Array;
}

/** A sink that takes encoded events as they are (ClickHouse's store): the writer's fast path. */
export interface EncodedEventSink {
  /** Stores the events whose ids are not stored yet; `inserted` = their `eventKey`s, as `EventStore.commit`. */
  commitEncoded(batch: { events: EncodedEvents[]; rejects: QuarantineRow[] }): Promise<{ inserted: Set<string> }>;
}

export function isEncodedEventSink(sink: object): sink is EncodedEventSink {
  return typeof (sink as Partial<EncodedEventSink>).commitEncoded === 'function';
}

/**
 * An encoded-event sink whose lookup of stored ids and insert the writer runs apart (ClickHouse's):
 * so that it looks the next batch up while this one is inserted.
 */
export interface SplitEncodedEventSink extends EncodedEventSink {
  /** Which of the event keys (`eventKey`) are stored already. */
  storedKeys(keys: Iterable<string>): Promise<Set<string>>;
  /** The rejects not stored yet (by tenant and id). */
  unstoredRejects(rejects: QuarantineRow[]): Promise<QuarantineRow[]>;
  /** Inserts the events and rejects as they are: the caller has left out those stored already. */
  insertEncoded(batch: { events: EncodedEvents[]; rejects: QuarantineRow[] }): Promise<void>;
}

export function isSplitEncodedEventSink(sink: object): sink is SplitEncodedEventSink {
  const split = sink as Partial<SplitEncodedEventSink>;
  return isEncodedEventSink(sink) && typeof split.storedKeys === 'function' && typeof split.insertEncoded === 'function' && typeof split.unstoredRejects === 'function';
}

/** Where each line of `block` starts (and, last, where the lines end); throws unless there is exactly one line per id. */
export function lineStarts(block: EncodedEvents): number[] {
  const starts = [0];
  const lines = block.lines;
  let at = 0;
  for (let i = 0; i < block.ids.length; i++) {
    const end = lines.indexOf(NEWLINE, at);
    if (end < 0) throw new Error(`Encoded events of tenant ${block.tenantSeq} hold ${i} lines for ${block.ids.length} ids.`);
    at = end + 1;
    starts.push(at);
  }
  if (at !== lines.length) throw new Error(`Encoded events of tenant ${block.tenantSeq} hold more lines than their ${block.ids.length} ids.`);
  return starts;
}

/** The events of `block` that `keep` keeps (the block itself when it keeps all). */
export function selectEvents(block: EncodedEvents, keep: (index: number) => boolean): EncodedEvents {
  const kept: number[] = [];
  for (let i = 0; i < block.ids.length; i++) if (keep(i)) kept.push(i);
  if (kept.length === block.ids.length) return block;
  const starts = lineStarts(block);
  const pieces = kept.map((i) => block.lines.subarray(starts[i], starts[i + 1]));
  return {
    tenantSeq: block.tenantSeq,
    ids: kept.map((i) => block.ids[i]!),
    users: kept.map((i) => block.users[i]!),
    received: kept.map((i) => block.received[i]!),
    lines: pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces),
  };
}

/** The events of some blocks, each key (`eventKey`) taken at its first occurrence. */
export interface FirstOccurrences {
  /** Every key of the blocks, once. */
  keys: Set<string>;
  /** The blocks with the first occurrence of each key `keep` keeps, and nothing else (empty blocks left out). */
  select(keep: (key: string) => boolean): EncodedEvents[];
  /** The blocks with the first occurrence of every key. */
  keepAll(): EncodedEvents[];
}

export function firstOccurrences(blocks: readonly EncodedEvents[]): FirstOccurrences {
  const keys = new Set<string>();
  let repeats = 0;
  const picked = blocks.map((block) => {
    const blockKeys: (string | null)[] = [];
    // `eventKey`, with the tenant's part made once per block.
    const prefix = `${block.tenantSeq}:`;
    for (const id of block.ids) {
      const key = prefix + id.toLowerCase();
      if (keys.size === keys.add(key).size) {
        blockKeys.push(null);
        repeats++;
      } else blockKeys.push(key);
    }
    return { block, blockKeys };
  });
  const select = (keep: (key: string) => boolean) =>
    picked
      .map(({ block, blockKeys }) =>
        selectEvents(block, (i) => {
          const key = blockKeys[i];
          return key !== null && key !== undefined && keep(key);
        }),
      )
      .filter((block) => block.ids.length);
  // Most batches repeat no id and keep every event: then the blocks are the answer.
  const keepAll = () => (repeats ? select(() => true) : blocks.filter((block) => block.ids.length));
  return { keys, select, keepAll };
}

/** The `eventKey` of each event of the blocks, in order. */
export function encodedKeys(blocks: readonly EncodedEvents[]): string[] {
  const keys: string[] = [];
  for (const block of blocks) for (const id of block.ids) keys.push(eventKey(block.tenantSeq, id));
  return keys;
}

/** The events of a block as rows, for a sink that takes rows (`decodeLine` reads one line). */
export function decodeEvents(block: EncodedEvents, decodeLine: (line: string) => EventRow): EventRow[] {
  const starts = lineStarts(block);
  const text = Buffer.from(block.lines.buffer, block.lines.byteOffset, block.lines.byteLength);
  return block.ids.map((_, i) => decodeLine(text.toString('utf8', starts[i], starts[i + 1]! - 1)));
}

/** Rows as encoded events, one block per tenant. */
export function encodeEvents(rows: readonly EventRow[]): EncodedEvents[] {
  const blocks = new Map<number, { ids: string[]; users: (string | null)[]; received: number[]; lines: string[] }>();
  for (const row of rows) {
    let block = blocks.get(row.tenantSeq);
    if (!block) blocks.set(row.tenantSeq, (block = { ids: [], users: [], received: [], lines: [] }));
    block.ids.push(row.eventId);
    block.users.push(row.userId);
    block.received.push(row.receivedAtMs);
    block.lines.push(`${insertLine(row)}\n`);
  }
  return [...blocks].map(([tenantSeq, b]) => ({ tenantSeq, ids: b.ids, users: b.users, received: b.received, lines: Buffer.from(b.lines.join('')) }));
}
