export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryRecord {
  id: string;
  tenantSeq: number;
  endpointId: string;
  eventId: string;
  event: string;
  userId: string | null;
  /** The exported event, exactly as sent on every attempt. */
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number | null;
  lastAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastLatencyMs: number | null;
  createdAt: number;
  deliveredAt: number | null;
}

export interface AttemptOutcome {
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number | null;
  attemptedAt: number;
  statusCode: number | null;
  error: string | null;
  latencyMs: number | null;
}

/**
 * The webhook outbox and attempt log: as many rows as the events, so they live beside them.
 * New deliveries are written by the EventStore in the same transaction as their events (see
 * CommitBatch.deliveries); this interface reads and updates them. A delivery names its
 * endpoint by id only: endpoints live in a WebhookEndpointStore, possibly another database.
 */
export interface WebhookDeliveryStore {
  /** Records a finished delivery that did not come from an event (a test message). */
  logDelivery(record: DeliveryRecord): Promise<void>;
  /** Every pending delivery (loaded by the dispatcher at start). */
  listPending(): Promise<DeliveryRecord[]>;
  getDelivery(tenantSeq: number, id: string): Promise<DeliveryRecord | null>;
  /** One endpoint's deliveries, newest first; `before` continues after the given (createdAt, id). */
  listDeliveries(
    tenantSeq: number,
    endpointId: string,
    options: { limit: number; status?: DeliveryStatus; before?: { createdAt: number; id: string } },
  ): Promise<DeliveryRecord[]>;
  /** Those of `ids` still pending (a delivery may have gone with its user or endpoint). */
  pendingAmong(ids: string[]): Promise<Set<string>>;
  /**
   * Records attempts, all in one transaction. Only deliveries still pending change: one failed
   * while its attempt was in flight (its endpoint disabled) stays failed.
   */
  recordAttempts(attempts: Array<{ id: string; outcome: AttemptOutcome }>): Promise<void>;
  /** Sets deliveries back to pending, due at `at`; returns them. */
  requeue(tenantSeq: number, endpointId: string, filter: { id?: string; failedSince?: number }, at: number): Promise<DeliveryRecord[]>;
  /** Abandons an endpoint's pending deliveries (endpoint disabled). */
  failPending(tenantSeq: number, endpointId: string, reason: string, at: number): Promise<number>;
  /** Removes an endpoint's pending deliveries (endpoint deleted); returns how many. */
  deletePending(tenantSeq: number, endpointId: string): Promise<number>;
  /** Removes finished deliveries created before `cutoffMs`; returns how many. */
  purgeBefore(cutoffMs: number): Promise<number>;
}
