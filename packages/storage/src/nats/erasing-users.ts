import type { EventLogEntry } from './event-log-chunks';

/**
 * Whether the user's data is being erased (a deletion job of the tenant is under way): the
 * writer then drops their rows instead of writing them after the deletion has run.
 */
export type ErasingUserCheck = (tenantSeq: number, userId: string) => boolean | Promise<boolean>;

/** The entries' rows in one entry, less the events, rejects and deliveries of users being erased. Asks once per user. */
export async function withoutErasingUsers(entries: EventLogEntry[], isErasing?: ErasingUserCheck): Promise<EventLogEntry> {
  const all: EventLogEntry = { events: [], rejects: [], deliveries: [] };
  for (const entry of entries) {
    all.events.push(...entry.events);
    all.rejects.push(...entry.rejects);
    all.deliveries.push(...entry.deliveries);
  }
  if (!isErasing) return all;
  const users = new Map<string, { tenantSeq: number; userId: string }>();
  for (const row of [...all.events, ...all.rejects, ...all.deliveries]) {
    if (row.userId !== null) users.set(userKey(row.tenantSeq, row.userId), { tenantSeq: row.tenantSeq, userId: row.userId });
  }
  const erasing = new Set<string>();
  for (const [key, { tenantSeq, userId }] of users) if (await isErasing(tenantSeq, userId)) erasing.add(key);
  if (!erasing.size) return all;
  // User ids are case-sensitive: `Bob` and `bob` are two users.
  const kept = <T extends { tenantSeq: number; userId: string | null }>(row: T) => row.userId === null || !erasing.has(userKey(row.tenantSeq, row.userId));
  return { events: all.events.filter(kept), rejects: all.rejects.filter(kept), deliveries: all.deliveries.filter(kept) };
}

function userKey(tenantSeq: number, userId: string): string {
  return `${tenantSeq}\n${userId}`;
}
