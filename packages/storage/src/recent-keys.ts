import { eventKey, type CommitBatch } from './event-store';
import type { EventRow } from './records';
import { EventIdTable, UUID_WORDS } from './event-id-table';

/**
 * Events known to be stored, by tenant and event id, in two generations: when the current one
 * is full it becomes the old one and the old one is dropped, so memory stays bounded while
 * retries, which come soon after the original, are still recognised.
 *
 * An id in the canonical UUID form (every id ingest stores) is kept as its 128 bits in a typed
 * array (EventIdTable): a lookup reads one slot instead of walking a Set of half a million key
 * strings, and the garbage collector has nothing to trace. Any other id is kept as its
 * `eventKey` string. Both are exact: an event is reported known only when that very
 * (tenant, id) was added.
 */
export class RecentKeys {
  private current: Generation;
  private previous: Generation | null = null;
  private readonly words = new Uint32Array(UUID_WORDS);

  constructor(private readonly perGeneration: number) {
    this.current = new Generation(perGeneration);
  }

  has(tenantSeq: number, eventId: string): boolean {
    if (EventIdTable.holds(tenantSeq) && EventIdTable.parseUuid(eventId, this.words)) {
      return this.current.ids.has(tenantSeq, this.words) || (this.previous?.ids.has(tenantSeq, this.words) ?? false);
    }
    const key = eventKey(tenantSeq, eventId);
    return this.current.others.has(key) || (this.previous?.others.has(key) ?? false);
  }

  add(tenantSeq: number, eventId: string): void {
    if (this.current.size() >= this.perGeneration) {
      this.previous = this.current;
      this.current = new Generation(this.perGeneration);
    }
    if (EventIdTable.holds(tenantSeq) && EventIdTable.parseUuid(eventId, this.words)) this.current.ids.add(tenantSeq, this.words);
    else this.current.others.add(eventKey(tenantSeq, eventId));
  }
}

class Generation {
  readonly ids: EventIdTable;
  readonly others = new Set<string>();

  constructor(capacity: number) {
    // Room for one at least: a generation of 0 keys still holds the key just added, as a Set would.
    this.ids = new EventIdTable(Math.max(1, capacity));
  }

  size(): number {
    return this.ids.size + this.others.size;
  }
}

/**
 * The events of `batch` a store should write: each id once (its first occurrence), none in
 * `recent`; with their keys, in order, and as a set. One key string per event: building and
 * hashing them is a visible part of the ingest CPU.
 */
export function unseenEvents(batch: CommitBatch, recent: RecentKeys): { events: EventRow[]; keys: string[]; unseen: Set<string> } {
  const events: EventRow[] = [];
  const keys: string[] = [];
  const unseen = new Set<string>();
  for (let i = 0; i < batch.events.length; i++) {
    const event = batch.events[i]!;
    const key = batch.keys?.[i] ?? eventKey(event.tenantSeq, event.eventId);
    if (unseen.has(key) || recent.has(event.tenantSeq, event.eventId)) continue;
    events.push(event);
    keys.push(key);
    unseen.add(key);
  }
  return { events, keys, unseen };
}
