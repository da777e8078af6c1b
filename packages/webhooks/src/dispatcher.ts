import { systemClock, type Bus, type Clock } from '@svc/protocol';
import { hashUserId, type DeliveryRecord, type WebhookDeliveryStore, type WebhookEndpointRecord } from '@svc/storage';
import { AttemptLog } from './attempt-log';
import { MinHeap } from './min-heap';
import type { WebhookSender } from './http-sender';
import { sendAttempt } from './send-attempt';
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
  /**
   * Told of a delivery whose endpoint `endpoint` does not know (disabled before start, or
   * deleted with its pending deliveries not yet removed); removes them if it was deleted.
   */
  endpointUnknown(tenantSeq: number, endpointId: string): Promise<void>;
}

export interface DispatchObserver {
  attempted(outcome: 'delivered' | 'retry' | 'failed', latencyMs: number): void;
  queueDepth(depth: number): void;
}

type Queued = Pick<DeliveryRecord, 'id' | 'tenantSeq' | 'endpointId' | 'eventId' | 'payload' | 'attempts'> & {
  dueAt: number;
  /** The delivery's event's userId, so that a deletion can forget it here too. */
  userId?: string | null;
};

/** The deliveries of one endpoint that are due, oldest first, and how many of its requests are out. */
interface Lane {
  ready: Queued[];
  /** Index of the next entry of `ready` (entries before it are taken). */
  head: number;
  sending: number;
}

const laneKey = (d: { tenantSeq: number; endpointId: string }) => `${d.tenantSeq}:${d.endpointId}`;

/** Pending deliveries asked about in one store query by `recheck`. */
const RECHECK_CHUNK = 10_000;

/**
 * Sends pending deliveries when they are due, with bounded concurrency overall and per
 * endpoint. The queue lives in memory and is rebuilt from the store at start, so a restart
 * loses nothing; every attempt is recorded before the next one is planned. At-least-once:
 * a crash between a receiver's 2xx and its recording means one more delivery.
 *
 * Due deliveries wait in one first-in-first-out lane per endpoint, served in turn; retries
 * wait in a heap by due time and join their lane when due. Finding work costs a few steps per
 * delivery sent, however long the queue is. The store is not asked before each send whether a
 * delivery is still pending: whatever removes pending deliveries behind the dispatcher's back
 * tells it (`drop` for an endpoint, `forgetUser` and `recheck` for a deletion).
 */
export class WebhookDispatcher {
  /** Deliveries waiting (due or not), by id; an entry taken for sending leaves this map. */
  private readonly queued = new Map<string, Queued>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly lanes = new Map<string, Lane>();
  private readonly later = new MinHeap<Queued>((d) => d.dueAt);
  /** Requests waiting for a receiver's answer. */
  private sending = 0;
  private timer: NodeJS.Timeout | null = null;
  private soonScheduled = false;
  /** Attempts that end together are recorded in one write. */
  private readonly attempts: AttemptLog;

  constructor(
    private readonly store: WebhookDeliveryStore,
    private readonly directory: EndpointDirectory,
    private readonly sender: WebhookSender,
    private readonly clock: Clock = systemClock,
    private readonly random: () => number = Math.random,
    private readonly observer: DispatchObserver = { attempted: () => {}, queueDepth: () => {} },
    /**
     * Where erasures are followed: the user's queued deliveries are forgotten before the
     * erasure (`user.erasing`) and the tenant's checked against the store after it
     * (`user.erased`). None by default.
     */
    bus: Bus | null = null,
  ) {
    this.attempts = new AttemptLog(store);
    bus?.subscribe('user.erasing', ({ tenantSeq, userHash, userId }) => this.forgetUser(tenantSeq, userHash, userId ?? undefined));
    bus?.subscribe('user.erased', ({ tenantSeq }) => this.recheck(tenantSeq));
  }

  /** Loads pending deliveries and starts the periodic dispatch. */
  async start(intervalMs: number = DISPATCH_INTERVAL_MS): Promise<void> {
    this.enqueue(await this.store.listPending());
    this.timer = setInterval(() => void this.runDue(), intervalMs);
    this.timer.unref();
    this.soon();
  }

  enqueue(deliveries: Array<Omit<Queued, 'dueAt'> & { nextAttemptAt?: number | null }>): void {
    const now = this.clock.now();
    for (const d of deliveries) {
      // One being sent is settled by its attempt.
      if (this.inFlight.has(d.id)) continue;
      this.wait({ id: d.id, tenantSeq: d.tenantSeq, endpointId: d.endpointId, eventId: d.eventId, payload: d.payload, attempts: d.attempts, userId: d.userId, dueAt: d.nextAttemptAt ?? now }, now);
    }
    this.observer.queueDepth(this.depth);
    if (deliveries.length) this.soon();
  }

  private wait(entry: Queued, now: number): void {
    // A newer entry for the same id makes the older one stale wherever it still sits.
    this.queued.set(entry.id, entry);
    if (entry.dueAt > now) {
      this.later.push(entry);
      return;
    }
    const key = laneKey(entry);
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { ready: [], head: 0, sending: 0 }));
    lane.ready.push(entry);
  }

  /** A freed slot or new work: look for due deliveries again right away (once per turn), not at the next tick. */
  private soon(): void {
    if (this.soonScheduled || !this.timer || !this.queued.size) return;
    this.soonScheduled = true;
    setImmediate(() => {
      this.soonScheduled = false;
      void this.runDue();
    });
  }

  /** Forgets the queued deliveries of an endpoint (disabled or deleted). */
  drop(tenantSeq: number, endpointId: string): void {
    this.forget((d) => d.tenantSeq === tenantSeq && d.endpointId === endpointId);
    const lane = this.lanes.get(laneKey({ tenantSeq, endpointId }));
    if (lane) {
      lane.ready = [];
      lane.head = 0;
    }
  }

  /**
   * Forgets the queued deliveries of a user's events, about to be erased from the store (the
   * userId in clear when known, else only its hash). Deliveries already being sent still go.
   */
  forgetUser(tenantSeq: number, userHash: string, userId?: string): void {
    this.forget((d) => d.tenantSeq === tenantSeq && d.userId !== null && d.userId !== undefined && (d.userId === userId || hashUserId(d.userId) === userHash));
  }

  /** Asks the store which of the tenant's queued deliveries are still pending and forgets the others. */
  async recheck(tenantSeq: number): Promise<void> {
    const ids = [...this.queued.values()].filter((d) => d.tenantSeq === tenantSeq).map((d) => d.id);
    for (let i = 0; i < ids.length; i += RECHECK_CHUNK) {
      const chunk = ids.slice(i, i + RECHECK_CHUNK);
      const pending = await this.store.pendingAmong(chunk);
      const gone = new Set(chunk.filter((id) => !pending.has(id)));
      if (gone.size) this.forget((d) => gone.has(d.id));
    }
  }

  /** Removes matching entries from the map; their places in lanes and the heap turn stale. */
  private forget(match: (d: Queued) => boolean): void {
    for (const [id, d] of this.queued) if (match(d)) this.queued.delete(id);
    this.observer.queueDepth(this.depth);
  }

  /** Deliveries waiting or being sent. */
  get depth(): number {
    return this.queued.size + this.inFlight.size;
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
    for (let next = this.later.peek(); next && next.dueAt <= now; next = this.later.peek()) {
      this.later.pop();
      if (this.queued.get(next.id) === next) this.wait(next, now);
    }
    const started: Promise<void>[] = [];
    // Endpoints take turns, one delivery each per round, until the limits or the work run out.
    let progress = true;
    while (progress && this.sending < MAX_IN_FLIGHT) {
      progress = false;
      for (const [key, lane] of this.lanes) {
        if (this.sending >= MAX_IN_FLIGHT) break;
        if (lane.sending >= MAX_IN_FLIGHT_PER_ENDPOINT) continue;
        const delivery = this.take(lane);
        if (!delivery) {
          if (!lane.sending) this.lanes.delete(key);
          continue;
        }
        progress = true;
        started.push(this.begin(delivery, lane));
      }
    }
    this.observer.queueDepth(this.depth);
    await Promise.allSettled(started);
  }

  /** The lane's next entry that is still current, taken out of the queue. */
  private take(lane: Lane): Queued | undefined {
    while (lane.head < lane.ready.length) {
      const entry = lane.ready[lane.head++]!;
      if (this.queued.get(entry.id) !== entry || this.inFlight.has(entry.id)) continue;
      this.queued.delete(entry.id);
      if (lane.head > 1024 && lane.head * 2 > lane.ready.length) {
        lane.ready = lane.ready.slice(lane.head);
        lane.head = 0;
      }
      return entry;
    }
    lane.ready = [];
    lane.head = 0;
    return undefined;
  }

  private begin(delivery: Queued, lane: Lane): Promise<void> {
    lane.sending++;
    this.sending++;
    // The slot is free once the receiver has answered; the delivery stays in flight (never
    // sent twice at once) until its attempt is recorded.
    const sent = () => {
      this.sending--;
      lane.sending--;
      this.soon();
    };
    const attempt = this.attempt(delivery, sent).finally(() => {
      this.inFlight.delete(delivery.id);
      this.observer.queueDepth(this.depth);
    });
    this.inFlight.set(delivery.id, attempt);
    return attempt;
  }

  private async attempt(delivery: Queued, sent: () => void): Promise<void> {
    const endpoint = this.directory.endpoint(delivery.tenantSeq, delivery.endpointId);
    if (!endpoint?.enabled) {
      sent();
      if (!endpoint) await this.directory.endpointUnknown(delivery.tenantSeq, delivery.endpointId);
      return;
    }
    const { outcome, ok, disableReason } = await sendAttempt(this.sender, endpoint, delivery, this.clock, this.random, sent);
    const { status, attempts, nextAttemptAt: next, attemptedAt: now } = outcome;
    await this.attempts.record(delivery.id, outcome);
    // An endpoint disabled while this attempt was in flight gets no more retries.
    if (next !== null && this.directory.endpoint(delivery.tenantSeq, delivery.endpointId)?.enabled) {
      this.wait({ ...delivery, attempts, dueAt: next }, this.clock.now());
    }
    this.observer.attempted(status === 'pending' ? 'retry' : status, outcome.latencyMs ?? 0);
    await this.directory.reportHealth(endpoint, { ok, at: now, disableReason });
  }
}
