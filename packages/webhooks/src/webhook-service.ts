import { randomBytes } from 'node:crypto';
import { uuidv7 } from 'uuidv7';
import { EVENT_NAMES, parseTimeIdCursor, randomBase62, SvcError, systemClock, toExportRecord, type Clock, type EventName, type StoredEvent } from '@svc/protocol';
import type { DeliveryRecord, DeliveryStatus, EventRow, MetadataChangeFeed, NewDelivery, Tenant, WebhookDeliveryStore, WebhookEndpointRecord, WebhookEndpointStore } from '@svc/storage';
import type { EndpointDirectory, WebhookDispatcher } from './dispatcher';
import { USER_AGENT } from './send-attempt';
import type { SendResult, WebhookSender } from './http-sender';
import { signatureHeader, newWebhookSecret } from './signature';
import { assertPublicTarget, parseWebhookUrl, type ResolveHost } from './url-guard';

/** After a rotation, the old secret keeps signing this long, so receivers can switch over. */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** Delivery logs are kept this long. */
export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
export const MAX_ENDPOINTS_PER_TENANT = 20;

/**
 * Where the service hands deliveries and tells of endpoints that stop taking them: the embedded
 * `WebhookDispatcher`, or a `QueueDispatcher` (cluster mode, where the queue already holds them).
 */
export type DeliveryDispatch = Pick<WebhookDispatcher, 'enqueue' | 'drop'>;

export interface EndpointInput {
  url?: string;
  description?: string | null;
  eventTypes?: string[] | null;
  enabled?: boolean;
}

/**
 * Webhook endpoints of each tenant, the routing of accepted events to them, and the
 * delivery log. Keeps every tenant's enabled endpoints in memory: routing runs on the
 * ingest path. With several nodes, each reloads an endpoint another node changed when the
 * change's notice arrives (`followChanges`).
 */
export class WebhookService implements EndpointDirectory {
  private endpoints = new Map<number, Map<string, WebhookEndpointRecord>>();
  private dispatcher: DeliveryDispatch | null = null;
  /** Endpoints being looked up for `endpointUnknown`, so that their deliveries ask once. */
  private readonly lookingUp = new Map<string, Promise<void>>();
  private changes: MetadataChangeFeed | null = null;
  /** Other nodes' changes, applied one after the other so that an older reload never lands last. */
  private applyingChanges: Promise<void> = Promise.resolve();

  constructor(
    private readonly endpointStore: WebhookEndpointStore,
    /** The outbox and attempt log (beside the events), or in full cluster mode the attempt log in PostgreSQL. */
    private readonly deliveryStore: WebhookDeliveryStore,
    private readonly sender: WebhookSender,
    /** `resolveHost`: how endpoint hosts are checked when saved (the system resolver by default). */
    private readonly options: { allowPrivate: boolean; resolveHost?: ResolveHost },
    private readonly clock: Clock = systemClock,
    private readonly random: (size: number) => Uint8Array = randomBytes,
  ) {}

  /** Loads the endpoints; deliveries go through `dispatcher` from then on. */
  async start(dispatcher: DeliveryDispatch): Promise<void> {
    this.dispatcher = dispatcher;
    for (const endpoint of await this.endpointStore.listEnabledEndpoints()) this.remember(endpoint);
  }

  /**
   * Publishes every endpoint change made here on `feed`, and applies those of other nodes: the
   * changed endpoint is read again (a disabled or deleted one stops receiving deliveries from
   * this node, and its pending deliveries here are failed or removed as on the node that made
   * the change); every enabled endpoint is read again when notices may have been lost. Call
   * once, before serving.
   */
  followChanges(feed: MetadataChangeFeed): void {
    this.changes = feed;
    feed.subscribe({
      changed: (change, fromThisNode) => {
        if (fromThisNode || change.kind !== 'webhook_endpoint' || change.id === undefined) return;
        const id = change.id;
        this.applyLater(() => this.reload(change.tenantSeq, id));
      },
      missedChanges: () => this.applyLater(() => this.reloadAll()),
    });
  }

  /** Settles once the changes heard so far from other nodes are applied (tests, shutdown). */
  changesApplied(): Promise<void> {
    return this.applyingChanges;
  }

  // --- routing (ingest path) ---

  /** Deliveries for the given rows, one per matching enabled endpoint of the tenant. */
  plan(tenant: Tenant, rows: EventRow[]): NewDelivery[] {
    const endpoints = [...(this.endpoints.get(tenant.seq)?.values() ?? [])].filter((e) => e.enabled);
    if (!endpoints.length) return [];
    const now = this.clock.now();
    const deliveries: NewDelivery[] = [];
    for (const row of rows) {
      let payload: string | null = null;
      for (const endpoint of endpoints) {
        if (endpoint.eventTypes && !endpoint.eventTypes.includes(row.event)) continue;
        payload ??= JSON.stringify(toExportRecord(rowToEvent(row)));
        deliveries.push({ id: uuidv7(), tenantSeq: tenant.seq, endpointId: endpoint.id, eventId: row.eventId, event: row.event, userId: row.userId, payload, createdAt: now });
      }
    }
    return deliveries;
  }

  /** Hands committed deliveries to the dispatcher. */
  accepted(deliveries: NewDelivery[]): void {
    this.dispatcher?.enqueue(deliveries.map((d) => ({ ...d, attempts: 0 })));
  }

  // --- endpoint directory (dispatcher) ---

  endpoint(tenantSeq: number, id: string): WebhookEndpointRecord | undefined {
    return this.endpoints.get(tenantSeq)?.get(id);
  }

  async reportHealth(endpoint: WebhookEndpointRecord, outcome: { ok: boolean; at: number; disableReason?: string }): Promise<void> {
    const current = this.endpoint(endpoint.tenantSeq, endpoint.id);
    if (!current) return;
    if (outcome.ok && current.failingSince === null) return;
    if (!outcome.ok && current.failingSince !== null && !outcome.disableReason) return;
    const updated: WebhookEndpointRecord = {
      ...current,
      failingSince: outcome.ok ? null : (current.failingSince ?? outcome.at),
      updatedAt: this.clock.now(),
    };
    if (outcome.disableReason) {
      updated.enabled = false;
      updated.disabledReason = outcome.disableReason;
      await this.deliveryStore.failPending(endpoint.tenantSeq, endpoint.id, `Endpoint disabled: ${outcome.disableReason}`, outcome.at);
      this.dispatcher?.drop(endpoint.tenantSeq, endpoint.id);
    }
    await this.endpointStore.updateEndpoint(updated);
    this.remember(updated);
    await this.published(updated.tenantSeq, updated.id);
  }

  // --- admin API ---

  async create(tenant: Tenant, input: EndpointInput & { url: string }): Promise<WebhookEndpointRecord> {
    const url = await this.checkUrl(input.url);
    const now = this.clock.now();
    const record: WebhookEndpointRecord = {
      tenantSeq: tenant.seq,
      id: `wh_${randomBase62(16, this.random)}`,
      url,
      description: input.description ?? null,
      eventTypes: checkEventTypes(input.eventTypes),
      enabled: input.enabled ?? true,
      disabledReason: null,
      secret: newWebhookSecret(this.random),
      previousSecret: null,
      previousSecretExpiresAt: null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await this.endpointStore.createEndpoint(record, MAX_ENDPOINTS_PER_TENANT))) {
      throw new SvcError('conflict', `A tenant has at most ${MAX_ENDPOINTS_PER_TENANT} webhook endpoints.`);
    }
    this.remember(record);
    await this.published(record.tenantSeq, record.id);
    return record;
  }

  list(tenant: Tenant): Promise<WebhookEndpointRecord[]> {
    return this.endpointStore.listEndpoints(tenant.seq);
  }

  async get(tenant: Tenant, id: string): Promise<WebhookEndpointRecord> {
    const record = await this.endpointStore.getEndpoint(tenant.seq, id);
    if (!record) throw new SvcError('not_found', `No webhook endpoint "${id}".`);
    return record;
  }

  async update(tenant: Tenant, id: string, input: EndpointInput): Promise<WebhookEndpointRecord> {
    const current = await this.get(tenant, id);
    const enabling = input.enabled === true && !current.enabled;
    const updated: WebhookEndpointRecord = {
      ...current,
      url: input.url !== undefined ? await this.checkUrl(input.url) : current.url,
      description: input.description !== undefined ? input.description : current.description,
      eventTypes: input.eventTypes !== undefined ? checkEventTypes(input.eventTypes) : current.eventTypes,
      enabled: input.enabled ?? current.enabled,
      // Enabling again starts afresh; disabling by hand says so.
      disabledReason: input.enabled === false ? 'Disabled by an administrator.' : enabling ? null : current.disabledReason,
      failingSince: enabling ? null : current.failingSince,
      updatedAt: this.clock.now(),
    };
    await this.endpointStore.updateEndpoint(updated);
    this.remember(updated);
    if (!updated.enabled && current.enabled) {
      // As after a 410: what was pending is failed, and can be replayed once enabled again.
      await this.deliveryStore.failPending(tenant.seq, id, 'Endpoint disabled by an administrator.', this.clock.now());
      this.dispatcher?.drop(tenant.seq, id);
    }
    await this.published(tenant.seq, id);
    return updated;
  }

  /**
   * Deletes the endpoint, then its pending deliveries: two steps, as endpoints and deliveries
   * may live in two databases. A stop between them (or an event routed to the endpoint while it
   * was being deleted) leaves pending deliveries of an endpoint that no longer exists: they are
   * never sent (no endpoint, no URL or secret) and the dispatcher removes them when it meets
   * them (`endpointUnknown`). The other order could leave an endpoint without the deliveries
   * it was owed, still receiving new ones.
   */
  async remove(tenant: Tenant, id: string): Promise<void> {
    if (!(await this.endpointStore.deleteEndpoint(tenant.seq, id))) throw new SvcError('not_found', `No webhook endpoint "${id}".`);
    this.endpoints.get(tenant.seq)?.delete(id);
    this.dispatcher?.drop(tenant.seq, id);
    await this.published(tenant.seq, id);
    await this.deliveryStore.deletePending(tenant.seq, id);
  }

  /**
   * The dispatcher met a delivery of an endpoint this process does not hold (disabled before it
   * started, made on another node, or deleted): when the endpoint exists it is held from now on,
   * else its pending deliveries go.
   */
  endpointUnknown(tenantSeq: number, endpointId: string): Promise<void> {
    const key = `${tenantSeq}:${endpointId}`;
    let lookup = this.lookingUp.get(key);
    if (!lookup) {
      lookup = (async () => {
        const record = await this.endpointStore.getEndpoint(tenantSeq, endpointId);
        // One made or changed on another node whose notice has not arrived yet is known from now
        // on (unless a notice has brought it meanwhile: that read may be the newer one).
        if (record) {
          if (!this.endpoint(tenantSeq, endpointId)) this.remember(record);
          return;
        }
        this.dispatcher?.drop(tenantSeq, endpointId);
        await this.deliveryStore.deletePending(tenantSeq, endpointId);
      })().finally(() => this.lookingUp.delete(key));
      this.lookingUp.set(key, lookup);
    }
    return lookup;
  }

  /** A new secret; the old one keeps signing (a second signature) for 24 hours. */
  async rotateSecret(tenant: Tenant, id: string): Promise<WebhookEndpointRecord> {
    const current = await this.get(tenant, id);
    const now = this.clock.now();
    const updated: WebhookEndpointRecord = {
      ...current,
      secret: newWebhookSecret(this.random),
      previousSecret: current.secret,
      previousSecretExpiresAt: now + SECRET_ROTATION_OVERLAP_MS,
      updatedAt: now,
    };
    await this.endpointStore.updateEndpoint(updated);
    this.remember(updated);
    await this.published(tenant.seq, id);
    return updated;
  }

  /** Sends a signed test message at once (not through the outbox), logs it and reports the answer. */
  async sendTest(tenant: Tenant, id: string): Promise<SendResult & { id: string }> {
    const endpoint = await this.get(tenant, id);
    const now = this.clock.now();
    const messageId = uuidv7();
    const body = JSON.stringify({ event: 'webhook.test', eventId: messageId, timestamp: new Date(now).toISOString(), data: { endpointId: endpoint.id } });
    const timestamp = Math.floor(now / 1000);
    const result = await this.sender.send(
      endpoint.url,
      {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': messageId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader([endpoint.secret], messageId, timestamp, body),
      },
      body,
    );
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    await this.deliveryStore.logDelivery({
      id: uuidv7(),
      tenantSeq: tenant.seq,
      endpointId: endpoint.id,
      eventId: messageId,
      event: 'webhook.test',
      userId: null,
      payload: body,
      status: ok ? 'delivered' : 'failed',
      attempts: 1,
      nextAttemptAt: null,
      lastAttemptAt: now,
      lastStatusCode: result.statusCode,
      lastError: ok ? null : (result.error ?? `HTTP ${result.statusCode}`),
      lastLatencyMs: result.latencyMs,
      createdAt: now,
      deliveredAt: ok ? now : null,
    });
    return { ...result, id: messageId };
  }

  async deliveries(
    tenant: Tenant,
    id: string,
    options: { limit: number; status?: DeliveryStatus; cursor?: string },
  ): Promise<{ data: DeliveryRecord[]; nextCursor: string | null }> {
    await this.get(tenant, id);
    const before = options.cursor ? decodeCursor(options.cursor) : undefined;
    const data = await this.deliveryStore.listDeliveries(tenant.seq, id, { limit: options.limit, status: options.status, before });
    const last = data[data.length - 1];
    return { data, nextCursor: data.length === options.limit && last ? Buffer.from(`${last.createdAt}|${last.id}`).toString('base64url') : null };
  }

  /** Sends one delivery again (whatever its state), or every failed one created since a time. */
  async replay(tenant: Tenant, id: string, what: { deliveryId?: string; failedSince?: number }): Promise<number> {
    const endpoint = await this.get(tenant, id);
    if (!endpoint.enabled) throw new SvcError('conflict', 'The endpoint is disabled; enable it before replaying.');
    if (what.deliveryId && !(await this.deliveryStore.getDelivery(tenant.seq, what.deliveryId))) {
      throw new SvcError('not_found', `No delivery "${what.deliveryId}".`);
    }
    const requeued = await this.deliveryStore.requeue(tenant.seq, id, { id: what.deliveryId, failedSince: what.failedSince }, this.clock.now());
    this.dispatcher?.enqueue(requeued);
    return requeued.length;
  }

  /** Removes finished deliveries older than 30 days. */
  purgeLogs(): Promise<number> {
    return this.deliveryStore.purgeBefore(this.clock.now() - DELIVERY_LOG_RETENTION_MS);
  }

  private published(tenantSeq: number, id: string): Promise<void> {
    return this.changes?.publish({ kind: 'webhook_endpoint', tenantSeq, id }) ?? Promise.resolve();
  }

  private applyLater(job: () => Promise<void>): void {
    // A failed reload (the database unreachable) leaves the endpoint as it was; the feed then
    // reports missed changes once it is back, and everything is read again.
    this.applyingChanges = this.applyingChanges.then(job).catch(() => undefined);
  }

  /** Reads again an endpoint another node changed, and acts here as that node did. */
  private async reload(tenantSeq: number, id: string): Promise<void> {
    const held = this.endpoint(tenantSeq, id);
    const record = await this.endpointStore.getEndpoint(tenantSeq, id);
    if (!record) {
      this.endpoints.get(tenantSeq)?.delete(id);
      this.dispatcher?.drop(tenantSeq, id);
      await this.deliveryStore.deletePending(tenantSeq, id);
      return;
    }
    this.remember(record);
    if (!record.enabled && held?.enabled) {
      this.dispatcher?.drop(tenantSeq, id);
      await this.deliveryStore.failPending(tenantSeq, id, `Endpoint disabled: ${record.disabledReason ?? 'on another node'}`, this.clock.now());
    }
  }

  /**
   * Reads every enabled endpoint again. Deliveries of one that was disabled or deleted meanwhile
   * meet no endpoint in the dispatcher, which then removes those of a deleted one (`endpointUnknown`).
   */
  private async reloadAll(): Promise<void> {
    const endpoints = new Map<number, Map<string, WebhookEndpointRecord>>();
    for (const endpoint of await this.endpointStore.listEnabledEndpoints()) {
      let forTenant = endpoints.get(endpoint.tenantSeq);
      if (!forTenant) endpoints.set(endpoint.tenantSeq, (forTenant = new Map()));
      forTenant.set(endpoint.id, endpoint);
    }
    this.endpoints = endpoints;
  }

  private remember(endpoint: WebhookEndpointRecord): void {
    let forTenant = this.endpoints.get(endpoint.tenantSeq);
    if (!forTenant) this.endpoints.set(endpoint.tenantSeq, (forTenant = new Map()));
    forTenant.set(endpoint.id, endpoint);
  }

  private async checkUrl(raw: string): Promise<string> {
    const url = parseWebhookUrl(raw);
    await assertPublicTarget(url, this.options.allowPrivate, this.options.resolveHost);
    return url.toString();
  }
}

function checkEventTypes(types: string[] | null | undefined): string[] | null {
  if (types === undefined || types === null || types.length === 0) return null;
  const unknown = types.filter((t) => !(EVENT_NAMES as readonly string[]).includes(t));
  if (unknown.length) {
    throw new SvcError('validation_failed', `Unknown event types: ${unknown.join(', ')}.`, {
      errors: [{ path: '/eventTypes', code: 'invalid_value', message: `unknown: ${unknown.join(', ')}` }],
    });
  }
  return [...new Set(types)];
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  const { ms, id } = parseTimeIdCursor(Buffer.from(cursor, 'base64url').toString());
  return { createdAt: ms, id };
}

/** The stored form of a row, for its export record. */
function rowToEvent(row: EventRow): StoredEvent {
  return {
    eventId: row.eventId,
    event: row.event as EventName,
    userId: row.userId,
    sessionId: row.sessionId,
    broadcastId: row.broadcastId,
    campaignId: row.campaignId,
    timestamp: new Date(row.timestampMs).toISOString(),
    receivedAt: new Date(row.receivedAtMs).toISOString(),
    country: row.country,
    data: JSON.parse(row.data) as Record<string, unknown>,
    orderId: row.orderId,
    sponsorId: row.sponsorId,
    items: row.items === null ? null : (JSON.parse(row.items) as StoredEvent['items']),
    total: row.total,
  };
}
