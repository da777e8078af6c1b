import { selectEvents } from '../encoded-events';
import type { EventLogEntry } from './event-log-chunks';

/**
 * When the erasure of the user's data under way was requested (a deletion job of the tenant not
 * completed yet), or null: the writer then drops their rows received up to that time instead of
 * writing them after the deletion has run. Rows received later (the user came back) are kept.
 */
export type ErasingSince = (tenantSeq: number, userId: string) => number | null | Promise<number | null>;

/**
 * The entries' rows in one entry, less the events, rejects and deliveries of users being erased
 * that were received (made) up to the erasure's request. Asks once per user.
 */
export async function withoutErasingUsers(entries: EventLogEntry[], erasingSince?: ErasingSince): Promise<EventLogEntry> {
  const all: EventLogEntry = { events: [], rejects: [], deliveries: [] };
  for (const entry of entries) {
    all.events.push(...entry.events);
    all.rejects.push(...entry.rejects);
    all.deliveries.push(...entry.deliveries);
  }
  if (!erasingSince) return all;
  const users = new Map<string, { tenantSeq: number; userId: string }>();
  const note = (tenantSeq: number, userId: string | null) => {
    if (userId !== null) users.set(userKey(tenantSeq, userId), { tenantSeq, userId });
  };
  for (const block of all.events) for (const userId of block.users) note(block.tenantSeq, userId);
  for (const row of [...all.rejects, ...all.deliveries]) note(row.tenantSeq, row.userId);
  const since = new Map<string, number>();
  for (const [key, { tenantSeq, userId }] of users) {
    const requestedAt = await erasingSince(tenantSeq, userId);
    if (requestedAt !== null) since.set(key, requestedAt);
  }
  if (!since.size) return all;
  // User ids are case-sensitive: `Bob` and `bob` are two users.
  const kept = (tenantSeq: number, userId: string | null, at: number) => {
    const requestedAt = userId === null ? undefined : since.get(userKey(tenantSeq, userId));
    return requestedAt === undefined || at > requestedAt;
  };
  return {
    events: all.events.map((block) => selectEvents(block, (i) => kept(block.tenantSeq, block.users[i]!, block.received[i]!))).filter((b) => b.ids.length),
    rejects: all.rejects.filter((row) => kept(row.tenantSeq, row.userId, row.receivedAtMs)),
    deliveries: all.deliveries.filter((row) => kept(row.tenantSeq, row.userId, row.createdAt)),
  };
}

function userKey(tenantSeq: number, userId: string): string {
  return `${tenantSeq}\n${userId}`;
}
