import type { NatsConnection, Subscription } from '@nats-io/transport-node';

/**
 * Core-NATS subject of "events stored" notices (not under `svc.events.`: the stream would keep
 * them). Best effort: a node that misses one catches up with the next.
 */
export const STORED_NOTICE_SUBJECT = 'svc.notice.events-stored';

/** Body of a notice: how many events the writer just stored, per tenant. */
export interface StoredNotice {
  tenants: Record<string, number>;
}

export function publishStoredNotice(connection: NatsConnection, countsByTenant: ReadonlyMap<number, number>): void {
  if (!countsByTenant.size || connection.isClosed()) return;
  const notice: StoredNotice = { tenants: Object.fromEntries([...countsByTenant].map(([seq, count]) => [String(seq), count])) };
  connection.publish(STORED_NOTICE_SUBJECT, JSON.stringify(notice));
}

/** Calls `listener` for each tenant of every notice from any node's writer; unsubscribe to stop. */
export function subscribeStoredNotices(connection: NatsConnection, listener: (tenantSeq: number, events: number) => void): Subscription {
  return connection.subscribe(STORED_NOTICE_SUBJECT, {
    callback: (error, message) => {
      if (error) return;
      let notice: StoredNotice;
      try {
        notice = message.json<StoredNotice>();
      } catch {
        return;
      }
      for (const [seq, count] of Object.entries(notice.tenants ?? {})) {
        const tenantSeq = Number(seq);
        if (Number.isInteger(tenantSeq) && typeof count === 'number') listener(tenantSeq, count);
      }
    },
  });
}
