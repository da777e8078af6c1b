import { eventKey, type CommitBatch } from './event-store';
import type { EventRow } from './records';

/**
 * Keys known to be stored, in two generations: when the current one is full it becomes the
 * old one and the old one is dropped, so memory stays bounded while retries, which come soon
 * after the original, are still recognised.
 */
export class RecentKeys {
  private current = new Set<string>();
  private previous = new Set<string>();

  constructor(private readonly perGeneration: number) {}

  has(key: string): boolean {
    return this.current.has(key) || this.previous.has(key);
  }

  add(key: string): void {
    if (this.current.size >= this.perGeneration) {
      this.previous = this.current;
      this.current = new Set();
    }
    this.current.add(key);
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
    if (unseen.has(key) || recent.has(key)) continue;
    events.push(event);
    keys.push(key);
    unseen.add(key);
  }
  return { events, keys, unseen };
}
