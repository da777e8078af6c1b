import type { StoredEvent } from '@svc/protocol';
import type { EventRow } from '../src';

/** The row an EventStore writes for an exported event of `tenantSeq` (the inverse of the export record). */
export function storedEventRow(tenantSeq: number, e: StoredEvent): EventRow {
  return {
    tenantSeq,
    eventId: e.eventId,
    event: e.event,
    userId: e.userId,
    sessionId: e.sessionId,
    broadcastId: e.broadcastId,
    campaignId: e.campaignId,
    timestampMs: Date.parse(e.timestamp),
    receivedAtMs: Date.parse(e.receivedAt),
    country: e.country,
    orderId: e.orderId,
    sponsorId: e.sponsorId,
    total: e.total,
    items: e.items === null ? null : JSON.stringify(e.items),
    data: JSON.stringify(e.data),
  };
}
