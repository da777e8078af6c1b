import type { ChDatabase } from '../src/clickhouse/ch-database';
import type { EventRow } from '../src/records';

/** Inserts events into ClickHouse's `events` table as they are, in one insert (one part). */
export async function insertEvents(db: ChDatabase, events: EventRow[]): Promise<void> {
  await db.insert(
    'events',
    events.map((e) => ({
      tenant_seq: e.tenantSeq, event_id: e.eventId, event: e.event, user_id: e.userId, session_id: e.sessionId, broadcast_id: e.broadcastId,
      campaign_id: e.campaignId, timestamp_ms: e.timestampMs, received_at_ms: e.receivedAtMs, country: e.country, order_id: e.orderId,
      sponsor_id: e.sponsorId, total: e.total, items: e.items, data: e.data,
    })),
  );
}
