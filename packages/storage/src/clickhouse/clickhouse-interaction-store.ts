import type { Interaction, InteractionStore } from '../interaction-store';
import { chNumber, type ChDatabase } from './ch-database';
import { EVENT_ID_TEXT, EVENT_ORDER } from './event-sql';
import { sqlInteger, sqlString } from './sql-literal';

interface InteractionRow {
  event: string;
  event_id: string;
  session_id: string;
  user_id: string | null;
  timestamp_ms: string;
  received_at_ms: string;
  data: string;
}

/** A field of the event's data as text (JSON text for a non-string), null when missing or null. */
function text(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * Votes and contest entries read back from the events in ClickHouse. The fields inside `data`
 * are read in Node (18.16 has no JSONExtract; `data` is the JSON text ingest wrote), and
 * unmerged copies of an event are dropped by LIMIT 1 BY.
 */
export class ClickHouseInteractionStore implements InteractionStore {
  constructor(private readonly db: ChDatabase) {}

  async listInteractions(tenantSeq: number, broadcastId: string): Promise<Interaction[]> {
    const rows = await this.db.query<InteractionRow>(
      `SELECT event, ${EVENT_ID_TEXT} AS event_id, session_id, user_id, timestamp_ms, received_at_ms, data FROM events
       WHERE tenant_seq = ${sqlInteger(tenantSeq)} AND broadcast_id = ${sqlString(broadcastId)} AND event IN ('poll.voted', 'contest.entered')
       ORDER BY ${EVENT_ORDER} LIMIT 1 BY timestamp_ms, event_id`,
    );
    return rows.map((row) => {
      const data = JSON.parse(row.data) as Record<string, unknown>;
      const optionIndex = data.optionIndex;
      return {
        kind: row.event === 'poll.voted' ? 'vote' : 'entry',
        overlayId: String(text(data.pollId) ?? text(data.contestId)),
        viewer: row.user_id ?? row.session_id,
        eventId: row.event_id,
        sessionId: row.session_id,
        userId: row.user_id,
        timestampMs: chNumber(row.timestamp_ms),
        receivedAtMs: chNumber(row.received_at_ms),
        optionIndex: typeof optionIndex === 'number' && Number.isInteger(optionIndex) ? optionIndex : null,
        optionSelected: text(data.optionSelected),
      };
    });
  }
}
