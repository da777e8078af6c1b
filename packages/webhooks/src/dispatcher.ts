import { systemClock, type Clock } from '@svc/protocol';
import type { DeliveryRecord, WebhookEndpointRecord, WebhookStore } from '@svc/storage';
import type { WebhookSender } from './http-sender';
import { DISABLE_AFTER_FAILING_MS, nextAttemptAt, parseRetryAfter } from './retry-schedule';
import { signatureHeader } from './signature';

export const USER_AGENT = 'Svc-Webhooks/1.0';
/** Deliveries in flight at once, over all endpoints. */
export const MAX_IN_FLIGHT = 64;
/** Deliveries in flight at once to one endpoint. */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 8;
/** How often the dispatcher looks for due deliveries. */
export const DISPATCH_INTERVAL_MS = 250;

/** What the dispatcher needs to know and change about endpoints. */
export interface EndpointDirectory {
  endpoint(tenantSeq: number, id: string): WebhookEndpointRecord | undefined;
  /** Records success or failure; disables the endpoint when `disableReason` is given. */
  reportHealth(endpoint: WebhookEndpointRecord, outcome: { ok: boolean; at: number; disableReason?: string }): Promise<void>;
}

export interface DispatchObserver {
  attempted(outcome: 'delivered' | 'retry' | 'failed', latencyMs: number): void;
  queueDepth(depth: number): void;
}

type Queued = Pick<DeliveryRecord, 'id' | 'tenantSeq' | 'endpointId' | 'eventId' | 'payload' | 'attempts'> & { dueAt: number };

/**
 * Sends pending deliveries when they are due, with bounded concurrency overall and per
 * endpoint. The queue lives in memory and is rebuilt from the store at start, so a restart
 * loses nothing; every attempt is recorded before the next one is planned. At-least-once:
 * a crash between a receiver's 2xx and its recording means one more delivery.
 */
export class WebhookDispatcher {
  private readonly queue = new Map<string, Queued>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly perEndpoint = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: WebhookStore,
    private readonly directory: EndpointDirectory,
    private readonly sender: WebhookSender,
    private readonly clock: Clock = systemClock,
    private readonly random: () => number = Math.random,
    private readonly observer: DispatchObserver = { attempted: () => {}, queueDepth: () => {} },
  ) {}

  /** Loads pending deliveries and starts the periodic dispatch. */
  async start(intervalMs: number = DISPATCH_INTERVAL_MS): Promise<void> {
    for (const delivery of await this.store.listPending()) this.enqueue([delivery]);
    this.timer = setInterval(() => void this.runDue(), intervalMs);
    this.timer.unref();
  }

  enqueue(deliveries: Array<Omit<Queued, 'dueAt'> & { nextAttemptAt?: number | null }>): void {
    const now = this.clock.now();
    for (const d of deliveries) {
      this.queue.set(d.id, { id: d.id, tenantSeq: d.tenantSeq, endpointId: d.endpointId, eventId: d.eventId, payload: d.payload, attempts: d.attempts, dueAt: d.nextAttemptAt ?? now });
    }
    this.observer.queueDepth(this.queue.size);
    if (deliveries.length && this.timer) setImmediate(() => void this.runDue());
  }

  /** Forgets the queued deliveries of an endpoint (disabled or deleted). */
  drop(tenantSeq: number, endpointId: string): void {
    for (const [id, d] of this.queue) if (d.tenantSeq === tenantSeq && d.endpointId === endpointId) this.queue.delete(id);
    this.observer.queueDepth(this.queue.size);
  }

  get depth(): number {
    return this.queue.size;
  }

  /**
   * Starts every due delivery that the concurrency limits allow and waits for those (not for
   * others still in flight: a slow endpoint never holds up the rest).
   */
  runDue(): Promise<void> {
    return this.dispatch();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.inFlight.values()]);
  }

  private async dispatch(): Promise<void> {
    const started: Promise<void>[] = [];
    const now = this.clock.now();
    const due = [...this.queue.values()].filter((d) => d.dueAt <= now && !this.inFlight.has(d.id)).sort((a, b) => a.dueAt - b.dueAt);
    for (const delivery of due) {
      if (this.inFlight.size >= MAX_IN_FLIGHT) break;
      const key = `${delivery.tenantSeq}:${delivery.endpointId}`;
      const busy = this.perEndpoint.get(key) ?? 0;
      if (busy >= MAX_IN_FLIGHT_PER_ENDPOINT) continue;
      this.perEndpoint.set(key, busy + 1);
      const attempt = this.attempt(delivery).finally(() => {
        this.inFlight.delete(delivery.id);
        this.perEndpoint.set(key, (this.perEndpoint.get(key) ?? 1) - 1);
      });
      this.inFlight.set(delivery.id, attempt);
      started.push(attempt);
    }
    await Promise.allSettled(started);
  }

  private async attempt(delivery: Queued): Promise<void> {
    const endpoint = this.directory.endpoint(delivery.tenantSeq, delivery.endpointId);
    if (!endpoint?.enabled || !(await this.store.isPending(delivery.id))) {
      // Disabled endpoint, or the delivery went with its user or its endpoint.
      this.queue.delete(delivery.id);
      return;
    }
    const now = this.clock.now();
    const timestamp = Math.floor(now / 1000);
    const secrets = [endpoint.secret];
    if (endpoint.previousSecret && (endpoint.previousSecretExpiresAt ?? 0) > now) secrets.push(endpoint.previousSecret);
    const result = await this.sender.send(
      endpoint.url,
      {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': delivery.eventId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, delivery.eventId, timestamp, delivery.payload),
      },
      delivery.payload,
    );
    const attempts = delivery.attempts + 1;
    const after = this.clock.now();
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    let disableReason: string | undefined;
    if (result.statusCode === 410) disableReason = 'The receiver answered 410 Gone.';
    else if (!ok && endpoint.failingSince !== null && after - endpoint.failingSince >= DISABLE_AFTER_FAILING_MS) {
      disableReason = 'Every delivery failed for 5 days.';
    }
    const next = ok || disableReason ? null : nextAttemptAt(after, attempts, this.random, parseRetryAfter(result.retryAfter, after));
    const status = ok ? 'delivered' : next === null ? 'failed' : 'pending';
    await this.store.recordAttempt(delivery.id, {
      status,
      attempts,
      nextAttemptAt: next,
      attemptedAt: now,
      statusCode: result.statusCode,
      error: result.error ?? (ok ? null : `HTTP ${result.statusCode}`),
      latencyMs: result.latencyMs,
    });
    if (next === null) this.queue.delete(delivery.id);
    else this.queue.set(delivery.id, { ...delivery, attempts, dueAt: next });
    this.observer.attempted(status === 'pending' ? 'retry' : status, result.latencyMs);
    this.observer.queueDepth(this.queue.size);
    await this.directory.reportHealth(endpoint, { ok, at: now, disableReason });
  }
}
