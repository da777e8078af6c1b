export interface WebhookEndpointRecord {
  tenantSeq: number;
  id: string;
  url: string;
  description: string | null;
  /** Event names to forward; null forwards every event. */
  eventTypes: string[] | null;
  enabled: boolean;
  disabledReason: string | null;
  /** `whsec_…`; signs every delivery. */
  secret: string;
  /** The secret before the last rotation, still signing until `previousSecretExpiresAt`. */
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
  /** Start of the current run of failures; null while deliveries succeed. */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

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
 * Webhook endpoints and their deliveries. New deliveries are written by the EventStore in the
 * same transaction as their events (see CommitBatch.deliveries); this interface reads and
 * updates them.
 */
export interface WebhookStore {
  createEndpoint(record: WebhookEndpointRecord): Promise<void>;
  getEndpoint(tenantSeq: number, id: string): Promise<WebhookEndpointRecord | null>;
  listEndpoints(tenantSeq: number): Promise<WebhookEndpointRecord[]>;
  /** Every enabled endpoint of every tenant (to route events). */
  listEnabledEndpoints(): Promise<WebhookEndpointRecord[]>;
  updateEndpoint(record: WebhookEndpointRecord): Promise<void>;
  /** Deletes the endpoint and its pending deliveries. */
  deleteEndpoint(tenantSeq: number, id: string): Promise<boolean>;

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
  /** Removes finished deliveries created before `cutoffMs`; returns how many. */
  purgeBefore(cutoffMs: number): Promise<number>;
}
