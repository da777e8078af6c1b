import { systemClock, type Clock } from '@svc/protocol';
import type { AttemptOutcome, DeliveryAttemptLog, LoggedState, NewDelivery, QueuedDelivery, WebhookQueue } from '@svc/storage';
import { AttemptLog } from './attempt-log';
import { BatchedLookup } from './batched-lookup';
import { EndpointTurns } from './endpoint-turns';
import { MAX_IN_FLIGHT, MAX_IN_FLIGHT_PER_ENDPOINT, type DispatchObserver, type EndpointDirectory } from './dispatcher';
import type { WebhookSender } from './http-sender';
import { sendAttempt } from './send-attempt';

/** Deliveries taken from the queue and not yet settled (waiting for their endpoint's turn or being sent). */
export const MAX_HELD = 1_024;
/** How long one pull from the queue waits for deliveries. */
export const PULL_EXPIRES_MS = 5_000;
/** Pause after the queue could not be reached, or an attempt could not be logged, before trying again. */
export const RETRY_AFTER_ERROR_MS = 5_000;
/** How often waiting deliveries tell the queue they are being worked on (a third of its 60 s ack wait). */
export const WORKING_INTERVAL_MS = 20_000;

export interface QueueDispatcherOptions {
  clock?: Clock;
  /** Random source of the retry jitter; `Math.random` by default. */
  random?: () => number;
  observer?: DispatchObserver;
  /** Whether a delivery's user is (being) erased: such a delivery is dropped unsent. None by default. */
  erased?: (delivery: NewDelivery) => boolean;
  /** Failures of the queue or the log, which the dispatcher survives (it tries again later). */
  onError?: (error: unknown) => void;
  /**
   * Defaults: `MAX_IN_FLIGHT`, `MAX_IN_FLIGHT_PER_ENDPOINT`, `MAX_HELD`, `PULL_EXPIRES_MS`,
   * `WORKING_INTERVAL_MS`; `maxWaitingPerEndpoint` (whatever the endpoint's answer time) `maxHeld`.
   */
  maxInFlight?: number;
  maxInFlightPerEndpoint?: number;
  maxHeld?: number;
  maxWaitingPerEndpoint?: number;
  pullExpiresMs?: number;
  workingIntervalMs?: number;
}

/**
 * Sends the deliveries of the shared work queue (cluster mode; every node runs one). At least
 * once: a delivery leaves the queue only once its outcome is logged; a failed attempt goes back
 * with the retry schedule's delay (the queue hands it out again then, to any node), and is given
 * up when the schedule is over. Before sending, a delivery is dropped if its user is erased
 * (`erased`), its endpoint deleted, or already logged as finished (a node that stopped between
 * logging and acknowledging); a disabled endpoint's deliveries are logged as failed, so they can
 * be replayed. Concurrency is bounded overall and per endpoint, endpoints taking turns, as in
 * the embedded `WebhookDispatcher`; attempts are logged in batches (`AttemptLog`).
 */
export class QueueDispatcher {
  private readonly turns: EndpointTurns;
  private held = 0;
  private running: AbortController | null = null;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private workingTimer: NodeJS.Timeout | null = null;
  private readonly settling = new Set<Promise<void>>();
  /** Deliveries whose outcome is being logged, by id: the log needs the whole delivery. */
  private readonly logging = new Map<string, NewDelivery>();
  private readonly attempts: AttemptLog;
  /** Redelivered deliveries arriving together are looked up in the log with one query. */
  private readonly states: BatchedLookup<LoggedState>;
  /** Endpoints found deleted (`tenantSeq:endpointId`): their queued deliveries are dropped without asking again. */
  private readonly deleted = new Set<string>();
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly limits: Required<Pick<QueueDispatcherOptions, 'maxInFlight' | 'maxInFlightPerEndpoint' | 'maxHeld' | 'maxWaitingPerEndpoint' | 'pullExpiresMs' | 'workingIntervalMs'>>;

  constructor(
    private readonly queue: WebhookQueue,
    private readonly log: DeliveryAttemptLog,
    private readonly directory: EndpointDirectory,
    private readonly sender: WebhookSender,
    private readonly options: QueueDispatcherOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.limits = {
      maxInFlight: options.maxInFlight ?? MAX_IN_FLIGHT,
      maxInFlightPerEndpoint: options.maxInFlightPerEndpoint ?? MAX_IN_FLIGHT_PER_ENDPOINT,
      maxHeld: options.maxHeld ?? MAX_HELD,
      maxWaitingPerEndpoint: options.maxWaitingPerEndpoint ?? options.maxHeld ?? MAX_HELD,
      pullExpiresMs: options.pullExpiresMs ?? PULL_EXPIRES_MS,
      workingIntervalMs: options.workingIntervalMs ?? WORKING_INTERVAL_MS,
    };
    this.turns = new EndpointTurns(this.limits, this.clock);
    this.states = new BatchedLookup((ids) => this.log.latestStates(ids));
    this.attempts = new AttemptLog({
      recordAttempts: (batch) => this.log.appendAttempts(batch.map(({ id, outcome }) => ({ delivery: this.logging.get(id)!, outcome }))),
    });
  }

  /** Starts pulling from the queue. */
  start(): void {
    if (this.running) return;
    this.running = new AbortController();
    this.turns.reopen();
    this.loop = this.pullLoop(this.running.signal);
    this.workingTimer = setInterval(() => this.turns.stillWorking(), this.limits.workingIntervalMs);
    this.workingTimer.unref();
  }

  /** Stops pulling, hands back what waits here, and waits for the attempts under way. */
  async stop(): Promise<void> {
    const running = this.running;
    if (!running) return;
    this.running = null;
    running.abort();
    this.wake?.();
    if (this.workingTimer) clearInterval(this.workingTimer);
    this.turns.close();
    await this.loop;
    await Promise.allSettled([...this.settling]);
  }

  /** New deliveries reach the queue through the event writer, replays through the store: nothing to do here. */
  enqueue(_deliveries: unknown[]): void {}

  /** A disabled or deleted endpoint's deliveries are settled when met (the endpoint is looked up before each send). */
  drop(_tenantSeq: number, _endpointId: string): void {}

  /** Deliveries taken from the queue and not yet settled. */
  get depth(): number {
    return this.held;
  }

  private async pullLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const room = this.limits.maxHeld - this.held;
      // Pulls of a few messages at a time cost more than they bring: wait for a quarter's room.
      if (room < this.limits.maxHeld / 4) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      try {
        for await (const queued of this.queue.pull(room, this.limits.pullExpiresMs, signal)) {
          if (signal.aborted) queued.retryIn(0);
          else this.take(queued);
        }
      } catch (error) {
        if (signal.aborted) break;
        this.options.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_ERROR_MS));
      }
    }
  }

  private take(queued: QueuedDelivery): void {
    this.held++;
    this.options.observer?.queueDepth(this.held);
    const settled = this.settle(queued)
      .catch((error: unknown) => {
        // The log or the receiver's answer is unknown: the queue hands it out again later.
        this.options.onError?.(error);
        queued.retryIn(RETRY_AFTER_ERROR_MS);
      })
      .finally(() => {
        this.held--;
        this.settling.delete(settled);
        this.options.observer?.queueDepth(this.held);
        this.wake?.();
      });
    this.settling.add(settled);
  }

  private async settle(queued: QueuedDelivery): Promise<void> {
    const delivery = queued.delivery;
    if (this.options.erased?.(delivery)) return queued.done();
    let attempts = queued.attemptsBefore;
    if (queued.redelivered) {
      // Handed out before: the log knows how many attempts it had, and whether it is finished.
      const state = await this.states.get(delivery.id);
      if (state && state.status !== 'pending') return queued.done();
      attempts = state?.attempts ?? attempts;
    }
    const key = `${delivery.tenantSeq}:${delivery.endpointId}`;
    // Handed back to the queue (stopped, or no room here for a slow endpoint's).
    if (!(await this.turns.turn(key, queued))) return;
    // The turn ends once the receiver has answered: the delivery's outcome is logged (in the
    // next batch) while the endpoint takes the next one.
    let turnOver = false;
    const endTurn = () => {
      if (turnOver) return;
      turnOver = true;
      this.turns.endTurn(key);
    };
    try {
      await this.send(queued, attempts, endTurn);
    } finally {
      endTurn();
    }
  }

  private async send(queued: QueuedDelivery, attemptsBefore: number, answered: () => void): Promise<void> {
    const delivery = queued.delivery;
    const key = `${delivery.tenantSeq}:${delivery.endpointId}`;
    let endpoint = this.directory.endpoint(delivery.tenantSeq, delivery.endpointId);
    if (!endpoint) {
      if (this.deleted.has(key)) return queued.done();
      await this.directory.endpointUnknown(delivery.tenantSeq, delivery.endpointId);
      endpoint = this.directory.endpoint(delivery.tenantSeq, delivery.endpointId);
      // Deleted: its deliveries go with it (ids are never used again).
      if (!endpoint) {
        this.deleted.add(key);
        return queued.done();
      }
    }
    if (!endpoint.enabled) {
      await this.record(delivery, {
        status: 'failed', attempts: attemptsBefore, nextAttemptAt: null, attemptedAt: this.clock.now(), statusCode: null,
        error: `Endpoint disabled: ${endpoint.disabledReason ?? 'by an administrator'}`, latencyMs: null,
      });
      return queued.done();
    }
    const { outcome, ok, disableReason } = await sendAttempt(this.sender, endpoint, { ...delivery, attempts: attemptsBefore }, this.clock, this.random, (result) => {
      // Known before the endpoint's next turn: how much of it may wait here depends on it.
      if (result) this.turns.answered(key, result.latencyMs);
      answered();
    });
    // Its user's erasure began while it was being sent: the log keeps nothing of it.
    if (this.options.erased?.(delivery)) return queued.done();
    await this.record(delivery, outcome);
    // An endpoint disabled while this attempt was in flight gets no more retries.
    if (outcome.nextAttemptAt !== null && this.directory.endpoint(delivery.tenantSeq, delivery.endpointId)?.enabled) {
      queued.retryIn(outcome.nextAttemptAt - this.clock.now());
    } else {
      queued.done();
    }
    this.options.observer?.attempted(outcome.status === 'pending' ? 'retry' : outcome.status, outcome.latencyMs ?? 0);
    await this.directory.reportHealth(endpoint, { ok, at: outcome.attemptedAt, disableReason });
  }

  private async record(delivery: NewDelivery, outcome: AttemptOutcome): Promise<void> {
    this.logging.set(delivery.id, delivery);
    try {
      await this.attempts.record(delivery.id, outcome);
    } finally {
      this.logging.delete(delivery.id);
    }
  }
}
