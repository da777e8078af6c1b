/** One viewer's poll vote or contest entry, as recorded in the event log. */
export interface Interaction {
  kind: 'vote' | 'entry';
  overlayId: string;
  /** The `userId`, else the session. */
  viewer: string;
  eventId: string;
  sessionId: string;
  userId: string | null;
  timestampMs: number;
  receivedAtMs: number;
  /** Of a vote, as sent (`null` when missing or not an integer). */
  optionIndex: number | null;
  optionSelected: string | null;
}

/**
 * Votes and contest entries read back from the events: event-side data, kept where the
 * events are, apart from the content metadata (`ContentStore`).
 */
export interface InteractionStore {
  /** Votes and contest entries of a broadcast, oldest first (rebuilds live state after a restart). */
  listInteractions(tenantSeq: number, broadcastId: string): Promise<Interaction[]>;
}
