import { firstOccurrences, type EncodedEvents, type SplitEncodedEventSink } from '../encoded-events';
import type { QuarantineRow } from '../records';
import type { EventLogEntry } from './event-log-chunks';
import type { WriterRows } from './poison-rows';

/** What a batch being inserted holds: the batch prepared meanwhile leaves these rows out. */
export interface InsertingRows {
  /** `eventKey` of its events. */
  keys: Set<string>;
  /** `rejectKey` of its rejects. */
  rejectKeys: ReadonlySet<string>;
}

export const NOTHING_INSERTING: InsertingRows = { keys: new Set(), rejectKeys: new Set() };

/** Rows a batch left out only because the batch before it was inserting them. */
export interface HeldRows {
  events: EncodedEvents[];
  keys: Set<string>;
  rejects: QuarantineRow[];
}

/** A batch's rows ready to insert, prepared while the batch before is inserted. */
export interface PreparedRows {
  /** Each event and reject once, none stored already, none the batch before is inserting. */
  rows: WriterRows;
  inserting: InsertingRows;
  held: HeldRows;
}

/** What the batch before stored: the keys of its events, or null when it failed (it may have stored some). */
export type StoredBefore = ReadonlySet<string> | null;

export function rejectKey(row: QuarantineRow): string {
  return `${row.tenantSeq}:${row.id.toLowerCase()}`;
}

/**
 * The rows of `entry` to insert: each event at its first occurrence, less those the sink has
 * stored already and those of the batch being inserted (`before`), which are not visible in the
 * sink yet and so not found there: they are held (see `withHeldRows`).
 */
export async function prepareRows(entry: EventLogEntry, sink: SplitEncodedEventSink, before: InsertingRows): Promise<PreparedRows> {
  const picked = firstOccurrences(entry.events);
  const stored = picked.keys.size ? await sink.storedKeys(picked.keys) : new Set<string>();
  const heldKeys = new Set<string>();
  if (before.keys.size) for (const key of picked.keys) if (before.keys.has(key) && !stored.has(key)) heldKeys.add(key);
  let keys = picked.keys;
  let events: EncodedEvents[];
  if (!stored.size && !heldKeys.size) events = picked.keepAll();
  else {
    keys = new Set();
    events = picked.select((key) => {
      if (stored.has(key) || heldKeys.has(key)) return false;
      keys.add(key);
      return true;
    });
  }
  const rejects: QuarantineRow[] = [];
  const heldRejects: QuarantineRow[] = [];
  const rejectKeys = new Set<string>();
  for (const row of await sink.unstoredRejects(entry.rejects)) {
    const key = rejectKey(row);
    if (before.rejectKeys.has(key)) heldRejects.push(row);
    else if (!rejectKeys.has(key)) {
      rejectKeys.add(key);
      rejects.push(row);
    }
  }
  return {
    rows: { events, rejects },
    inserting: { keys, rejectKeys },
    held: { events: heldKeys.size ? picked.select((key) => heldKeys.has(key)) : [], keys: heldKeys, rejects: heldRejects },
  };
}

/**
 * The prepared rows plus the held rows that the batch before did not store after all: it failed
 * (its messages come again, but a copy here must not wait for them) or set an event aside. These
 * are looked up again, since a failed batch may have stored a part of its rows. Called once the
 * batch before is done and before the batch after is prepared, which leaves out these too.
 */
export async function withHeldRows(prepared: PreparedRows, storedBefore: StoredBefore, sink: SplitEncodedEventSink): Promise<PreparedRows> {
  const { rows, held, inserting } = prepared;
  const missing = new Set([...held.keys].filter((key) => !storedBefore?.has(key)));
  const rejects = storedBefore === null && held.rejects.length ? await sink.unstoredRejects(held.rejects) : [];
  if (!missing.size && !rejects.length) return prepared;
  const stored = missing.size ? await sink.storedKeys(missing) : new Set<string>();
  const keys = new Set(inserting.keys);
  const events = firstOccurrences(held.events).select((key) => {
    if (!missing.has(key) || stored.has(key)) return false;
    keys.add(key);
    return true;
  });
  const rejectKeys = new Set(inserting.rejectKeys);
  for (const row of rejects) rejectKeys.add(rejectKey(row));
  return {
    rows: { events: [...rows.events, ...events], rejects: [...rows.rejects, ...rejects] },
    inserting: { keys, rejectKeys },
    held: { events: [], keys: new Set(), rejects: [] },
  };
}
