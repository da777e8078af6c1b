import type { EventRow, Tenant } from '@svc/storage';
import { TEST_SETTINGS } from '../../storage/test/test-settings';

/** A tenant of the webhook tests that run on PostgreSQL and DuckDB together. */
export function testTenant(id: string, name: string): Tenant {
  return { seq: 1, id, name, createdAt: 0, retentionMonths: 12, settings: TEST_SETTINGS };
}

/** Makes events of `tenant`, each with an id of its own. */
export function eventRows(tenant: Tenant): () => EventRow {
  let count = 0;
  return () => ({
    tenantSeq: tenant.seq, eventId: `0190a6a0-0000-7000-8000-${String(++count).padStart(12, '0')}`, event: 'poll.voted', userId: null, sessionId: 'svc_s',
    broadcastId: 'b', campaignId: 1, timestampMs: 1, receivedAtMs: 2, country: null, orderId: null, sponsorId: null, total: null, items: null, data: '{}',
  });
}
