import { systemClock, type Clock } from '@svc/protocol';
import type { DeliveryRecord, WebhookEndpointRecord, WebhookStore } from '@svc/storage';
import { AttemptLog } from './attempt-log';
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

const endpointKey = (d: Queued) => `${d.tenantSeq}:${d.endpointId}`;

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
  /** Requests waiting for a receiver's answer. */
  private sending = 0;
  private timer: NodeJS.Timeout | null = null;
  private soonScheduled = false;
  /** Attempts that end together are recorded in one write. */
  private readonly attempts: AttemptLog;

  constructor(
    private readonly store: WebhookStore,
    private readonly directory: EndpointDirectory,
    private readonly sender: WebhookSender,
    private readonly clock: Clock = systemClock,
    private readonly random: () => number = Math.random,
    private readonly observer: DispatchObserver = { attempted: () => {}, queueDepth: () => {} },
  ) {
    this.attempts = new AttemptLog(store);
  }

  /** Loads pending deliveries and starts the periodic dispatch. */
  async start(intervalMs: number = DISPATCH_INTERVAL_MS): Promise<void> {
    for (const delivery of await this.store.listPending()) this.enqueue([delivery]);
    this.timer = setInterval(() => void this.runDue(), intervalMs);
    this.timer.unref();
    this.soon();
  }

  enqueue(deliveries: Array<Omit<Queued, 'dueAt'> & { nextAttemptAt?: number | null }>): void {
    const now = this.clock.now();
    for (const d of deliveries) {
      this.queue.set(d.id, { id: d.id, tenantSeq: d.tenantSeq, endpointId: d.endpointId, eventId: d.eventId, payload: d.payload, attempts: d.attempts, dueAt: d.nextAttemptAt ?? now });
    }
    this.observer.queueDepth(this.queue.size);
    if (deliveries.length) this.soon();
  }

  /** A freed slot or new work: look for due deliveries again right away (once per turn), not at the next tick. */
  private soon(): void {
    if (this.soonScheduled || !this.timer || !this.queue.size) return;
    this.soonScheduled = true;
    setImmediate(() => {
      this.soonScheduled = false;
      void this.runDue();
    });
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
    const now = this.clock.now();
    // Choose what the limits allow (in queue order: new deliveries come last), then ask the
    // store in one query which are still pending.
    const chosen: Queued[] = [];
    const planned = new Map<string, number>();
    for (const delivery of this.queue.values()) {
      if (this.sending + chosen.length >= MAX_IN_FLIGHT) break;
      if (delivery.dueAt > now || this.inFlight.has(delivery.id)) continue;
      const key = endpointKey(delivery);
      const busy = (this.perEndpoint.get(key) ?? 0) + (planned.get(key) ?? 0);
      if (busy >= MAX_IN_FLIGHT_PER_ENDPOINT) continue;
      planned.set(key, (planned.get(key) ?? 0) + 1);
      chosen.push(delivery);
    }
    if (!chosen.length) return;
    const pending = await this.store.pendingAmong(chosen.map((d) => d.id));
    const started: Promise<void>[] = [];
    for (const delivery of chosen) {
      if (!pending.has(delivery.id)) {
        // Gone with its user or its endpoint.
        this.queue.delete(delivery.id);
        continue;
      }
      // Another pass may have started, or even finished, some while the store answered: a
      // finished attempt removed or replaced the queue entry this pass chose.
      const key = endpointKey(delivery);
      const busy = this.perEndpoint.get(key) ?? 0;
      if (this.queue.get(delivery.id) !== delivery || this.inFlight.has(delivery.id)) continue;
      if (this.sending >= MAX_IN_FLIGHT || busy >= MAX_IN_FLIGHT_PER_ENDPOINT) continue;
      this.perEndpoint.set(key, busy + 1);
      this.sending++;
      // The slot is free once the receiver has answered; the delivery stays in flight (never
      // sent twice at once) until its attempt is recorded.
      const sent = () => {
        this.sending--;
        this.perEndpoint.set(key, (this.perEndpoint.get(key) ?? 1) - 1);
        this.soon();
      };
      const attempt = this.attempt(delivery, sent).finally(() => this.inFlight.delete(delivery.id));
      this.inFlight.set(delivery.id, attempt);
      started.push(attempt);
    }
    this.observer.queueDepth(this.queue.size);
    await Promise.allSettled(started);
  }

  private async attempt(delivery: Queued, sent: () => void): Promise<void> {
    const endpoint = this.directory.endpoint(delivery.tenantSeq, delivery.endpointId);
    if (!endpoint?.enabled) {
      sent();
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
    ).finally(sent);
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
    await this.attempts.record(delivery.id, {
      status,
      attempts,
      nextAttemptAt: next,
      attemptedAt: now,
      statusCode: result.statusCode,
      error: result.error ?? (ok ? null : `HTTP ${result.statusCode}`),
      latencyMs: result.latencyMs,
    });
    // An endpoint disabled while this attempt was in flight gets no more retries.
    if (next === null || !this.directory.endpoint(delivery.tenantSeq, delivery.endpointId)?.enabled) this.queue.delete(delivery.id);
    else this.queue.set(delivery.id, { ...delivery, attempts, dueAt: next });
    this.observer.attempted(status === 'pending' ? 'retry' : status, result.latencyMs);
    this.observer.queueDepth(this.queue.size);
    await this.directory.reportHealth(endpoint, { ok, at: now, disableReason });
  }
}
