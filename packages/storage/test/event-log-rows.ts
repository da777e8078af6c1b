import type { EventRow, NewDelivery, QuarantineRow } from '../src';

/** Rows for the event log tests. */
export const eventId = (n: number) => `0190a6a0-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;

export function eventRow(n: number, fields: Partial<EventRow> = {}): EventRow {
  return {
    tenantSeq: 1, eventId: eventId(n), event: 'checkout.completed', userId: `u-${n}`, sessionId: `svc_s${n}`, broadcastId: 'b', campaignId: 7,
    timestampMs: 1_700_000_000_000 + n, receivedAtMs: 1_700_000_000_500 + n, country: 'DE', orderId: `o-${n}`, sponsorId: 'sp', total: 12.5,
    items: '[{"productId":"p","quantity":1,"unitPrice":12.5}]', data: '{"currency":"EUR"}', ...fields,
  };
}

export function rejectRow(n: number, fields: Partial<QuarantineRow> = {}): QuarantineRow {
  return {
    tenantSeq: 1, id: eventId(100_000 + n), receivedAtMs: 1_700_000_000_000, code: 'unknown_event', detail: 'x', errors: '[]', eventName: null, userId: null, payload: '{}',
    ...fields,
  };
}

export function deliveryOf(event: EventRow, endpointId = 'ep-1'): NewDelivery {
  return {
    id: `${endpointId}:${event.eventId}`,
    tenantSeq: event.tenantSeq, endpointId, eventId: event.eventId, event: event.event, userId: event.userId,
    payload: JSON.stringify({ type: event.event, eventId: event.eventId }), createdAt: event.receivedAtMs,
  };
}
