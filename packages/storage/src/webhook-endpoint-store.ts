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

/**
 * Webhook endpoints: where each tenant's events go and the secrets that sign them. Metadata,
 * shared by every node in cluster mode; their deliveries live in a WebhookDeliveryStore,
 * possibly in another database.
 */
export interface WebhookEndpointStore {
  /**
   * Adds the endpoint unless its tenant already has `maxPerTenant` endpoints; returns whether
   * it was added. Count and insert are one step, also for nodes creating at the same moment.
   */
  createEndpoint(record: WebhookEndpointRecord, maxPerTenant: number): Promise<boolean>;
  getEndpoint(tenantSeq: number, id: string): Promise<WebhookEndpointRecord | null>;
  /** The tenant's endpoints, oldest first. */
  listEndpoints(tenantSeq: number): Promise<WebhookEndpointRecord[]>;
  /** Every enabled endpoint of every tenant (to route events), by tenant then id. */
  listEnabledEndpoints(): Promise<WebhookEndpointRecord[]>;
  updateEndpoint(record: WebhookEndpointRecord): Promise<void>;
  /**
   * Deletes the endpoint only; its pending deliveries are removed afterwards with
   * WebhookDeliveryStore.deletePending (see WebhookService.remove for the order).
   */
  deleteEndpoint(tenantSeq: number, id: string): Promise<boolean>;
}
