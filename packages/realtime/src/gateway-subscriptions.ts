import type { Bus, LiveViewerCounts, StoredContestEntry, StoredPollVote } from '@svc/protocol';
import { hashUserId } from '@svc/storage';
import type { Gateway } from './gateway';
import type { StoredEntry, StoredVote } from './room';

/**
 * What the gateway follows on the bus: overlay changes of its rooms, votes and contest entries stored by any path,
 * viewers' own `broadcast.left`, revoked API keys and erasures. Returns the function that ends
 * every subscription.
 */
export function subscribeGateway(bus: Bus, gateway: Gateway): () => void {
  const ends = [
    bus.subscribe('content.changed', ({ tenantSeq, broadcastId, change }) => gateway.applyContentChange(tenantSeq, broadcastId, change)),
    // Votes stored by any path count in the live results of a room by the same rule as a rebuild.
    // Only votes for a room open here are decoded (a JSON.parse per vote took 2% of a node's
    // main thread under the ingest benchmark, where no viewer is connected).
    bus.subscribe('poll.voted', ({ tenantSeq, votes }) => {
      const counted = votes.filter((vote) => gateway.hasRoom(tenantSeq, vote.broadcastId)).map(storedVote);
      if (counted.length) void gateway.noteVotes(tenantSeq, counted);
    }),
    // Entries stored by any path, on any node, show in the viewer's welcome wherever the room is open.
    bus.subscribe('contest.entered', ({ tenantSeq, entries }) => {
      const recorded = entries.filter((entry) => gateway.hasRoom(tenantSeq, entry.broadcastId)).flatMap(storedEntry);
      if (recorded.length) void gateway.noteEntries(tenantSeq, recorded);
    }),
    // A viewer's own broadcast.left that arrives over HTTP (beacon) spares it the server's one.
    bus.subscribe('session.left', ({ tenantSeq, sessionIds }) => {
      for (const sessionId of sessionIds) gateway.noteClientLeft(tenantSeq, sessionId);
    }),
    // A revoked key stops working at once, for open sockets too.
    bus.subscribe('apiKey.revoked', ({ tenantSeq, key }) => void gateway.disconnectApiKey(tenantSeq, key)),
    // An erased user's sessions carry their userId no more.
    bus.subscribe('user.erasing', ({ tenantSeq, userId, userHash }) =>
      gateway.forgetUser(tenantSeq, (id) => id === userId || hashUserId(id) === userHash),
    ),
  ];
  return () => {
    for (const end of ends) end();
  };
}

/** A stored vote as a room counts it (its `data` decoded). */
export function storedVote(vote: StoredPollVote): StoredVote {
  const data = JSON.parse(vote.data) as { pollId: string; optionIndex?: unknown; optionSelected?: unknown };
  return {
    pollId: data.pollId,
    eventId: vote.eventId,
    sessionId: vote.sessionId,
    userId: vote.userId,
    broadcastId: vote.broadcastId,
    timestampMs: vote.timestampMs,
    receivedAtMs: vote.receivedAtMs,
    optionIndex: typeof data.optionIndex === 'number' ? data.optionIndex : -1,
    optionSelected: data.optionSelected,
  };
}

/** A stored entry as a room records it (its `data` decoded); none when its data names no contest. */
export function storedEntry(entry: StoredContestEntry): StoredEntry[] {
  let contestId: unknown;
  try {
    contestId = (JSON.parse(entry.data) as { contestId?: unknown }).contestId;
  } catch {
    return [];
  }
  return typeof contestId === 'string' ? [{ broadcastId: entry.broadcastId, contestId, viewer: entry.userId ?? entry.sessionId }] : [];
}

/** The gateway's counts of connected viewers, as the dashboard reads them. */
export function gatewayViewerCounts(gateway: Gateway): LiveViewerCounts {
  return {
    liveViewers: (tenantSeq, filter) =>
      gateway.liveViewers(
        tenantSeq,
        (broadcastId, campaignId) =>
          (filter.broadcastId === undefined || filter.broadcastId === broadcastId) && (filter.campaignId === undefined || filter.campaignId === campaignId),
        filter.country,
      ),
    liveViewersByBroadcast: (tenantSeq) => gateway.liveViewersByBroadcast(tenantSeq),
  };
}
