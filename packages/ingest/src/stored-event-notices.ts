import { fanOut, type Bus, type StoredContestEntry, type StoredPollVote } from '@svc/protocol';
import type { EventRow } from '@svc/storage';

/**
 * Tells the bus what a commit stored: `events.stored` (when the commit makes them readable),
 * the votes among them (`poll.voted`), the contest entries (`contest.entered`) and viewers' own `broadcast.left` (`session.left`, sent
 * by the SDK only: a server's broadcast.left does not end a live session).
 */
export function announceStored(bus: Bus, tenantSeq: number, source: 'client' | 'server', rows: readonly EventRow[], readable: boolean): void {
  if (readable) fanOut(bus, 'events.stored', { tenantSeq });
  const votes: StoredPollVote[] = [];
  const entries: StoredContestEntry[] = [];
  const left: string[] = [];
  for (const row of rows) {
    if (row.event === 'poll.voted') {
      const { eventId, sessionId, userId, broadcastId, timestampMs, receivedAtMs, data } = row;
      votes.push({ eventId, sessionId, userId, broadcastId, timestampMs, receivedAtMs, data });
    } else if (row.event === 'contest.entered') {
      const { eventId, sessionId, userId, broadcastId, data } = row;
      entries.push({ eventId, sessionId, userId, broadcastId, data });
    } else if (row.event === 'broadcast.left' && source === 'client') left.push(row.sessionId);
  }
  if (votes.length) fanOut(bus, 'poll.voted', { tenantSeq, votes });
  if (entries.length) fanOut(bus, 'contest.entered', { tenantSeq, entries });
  if (left.length) fanOut(bus, 'session.left', { tenantSeq, sessionIds: left });
}
