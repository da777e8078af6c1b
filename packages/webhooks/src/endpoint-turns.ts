import { systemClock, type Clock } from '@svc/protocol';
import type { QueuedDelivery } from '@svc/storage';

/**
 * A slow endpoint (answering in `SLOW_ANSWER_MS` or more on average, for `SLOW_FOR_MS` at least)
 * keeps waiting here for its turn what it takes in this long (one that times out, a few dozen),
 * so that it cannot fill the dispatcher; the rest is handed back to the queue, each for about as
 * long as those before it take. Handing back costs (the queue hands it out again, the log is
 * asked about it, and the node may idle meanwhile), so endpoints that answer faster are never
 * handed back, nor one slowed for a moment: during a burst the receiver and the node itself are
 * busy, answers take a second or more, and deliveries handed back for the time those answers
 * predict would wait in the queue for half a minute after the endpoint is fast again.
 */
export const MAX_BACKLOG_MS = 30_000;
export const SLOW_ANSWER_MS = 1_000;
/**
 * How long an endpoint's slow answers must span before it is treated as slow: from the start of
 * the first slow request of the streak to the last slow answer (one answer that long is enough).
 */
export const SLOW_FOR_MS = 10_000;
/** An endpoint not heard from for this long is judged afresh by its next answers. */
export const FORGET_AFTER_MS = 60_000;
/** Shortest and longest stay in the queue of a delivery handed back for want of room here. */
export const MIN_DEFER_MS = 1_000;
export const MAX_DEFER_MS = 60_000;
/** Weight of the newest answer time in an endpoint's average (exponentially weighted). */
const LATENCY_WEIGHT = 0.2;

export interface TurnLimits {
  /** Requests out at once, over all endpoints. */
  maxInFlight: number;
  /** Requests out at once to one endpoint. */
  maxInFlightPerEndpoint: number;
  /** Deliveries of one endpoint waiting for its turn, whatever its answer time. */
  maxWaitingPerEndpoint: number;
}

/** How an endpoint has been answering. */
interface Pace {
  /** Average answer time, ms (exponentially weighted). */
  averageMs: number;
  /** When it last answered. */
  heardAt: number;
  /** While slow on average: the start of the streak's first slow request, and its last slow answer. */
  slow?: { since: number; last: number };
}

/** One endpoint's requests out, and the deliveries waiting for a free one, oldest first. */
interface Lane {
  sending: number;
  /** `start(false)`: handed back to the queue instead (closed, or no room for it after all). */
  waiting: Array<{ start: (go: boolean) => void; queued: QueuedDelivery }>;
}

/**
 * Whose turn it is to send, among the deliveries a queue dispatcher holds: at most so many
 * requests out overall and per endpoint, endpoints taking turns (one delivery each per round),
 * each endpoint's deliveries in the order they came. Endpoints are keyed `tenantSeq:endpointId`.
 */
export class EndpointTurns {
  private readonly lanes = new Map<string, Lane>();
  private sending = 0;
  private closed = false;
  /** How each endpoint has been answering. */
  private readonly paces = new Map<string, Pace>();

  constructor(
    private readonly limits: TurnLimits,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Resolves true when the delivery may be sent (then call `endTurn` once it is answered), or
   * false when it was handed back to the queue instead (no room here, or closed).
   */
  async turn(key: string, queued: QueuedDelivery): Promise<boolean> {
    if (this.closed) {
      queued.retryIn(0);
      return false;
    }
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { sending: 0, waiting: [] }));
    if (lane.waiting.length >= this.waitingRoom(key)) {
      queued.retryIn(this.deferMs(key, lane));
      return false;
    }
    const waiting = lane.waiting;
    return new Promise<boolean>((start) => {
      waiting.push({ start, queued });
      this.startWaiting();
    });
  }

  endTurn(key: string): void {
    const lane = this.lanes.get(key);
    if (!lane) return;
    lane.sending--;
    this.sending--;
    if (!lane.sending && !lane.waiting.length) this.lanes.delete(key);
    this.startWaiting();
  }

  /** Updates the endpoint's average answer time, and hands back what it now has too much of waiting. */
  answered(key: string, latencyMs: number): void {
    const now = this.clock.now();
    // After a long silence the endpoint starts afresh: an old slow spell says nothing of it now.
    const previous = this.recentPace(key);
    const averageMs = previous ? previous.averageMs + LATENCY_WEIGHT * (latencyMs - previous.averageMs) : latencyMs;
    let slow: Pace['slow'];
    // A fast answer that leaves the average slow neither begins nor lengthens the streak.
    if (averageMs >= SLOW_ANSWER_MS) slow = latencyMs >= SLOW_ANSWER_MS ? { since: Math.min(previous?.slow?.since ?? Infinity, now - latencyMs), last: now } : previous?.slow;
    this.paces.set(key, { averageMs, heardAt: now, slow });
    const lane = this.lanes.get(key);
    if (!lane) return;
    const room = this.waitingRoom(key);
    while (lane.waiting.length > room) {
      const newest = lane.waiting.pop()!;
      newest.queued.retryIn(this.deferMs(key, lane));
      newest.start(false);
    }
  }

  /** Hands every waiting delivery back to the queue at once and starts none from now on. */
  close(): void {
    this.closed = true;
    for (const lane of this.lanes.values()) {
      for (const { start, queued } of lane.waiting.splice(0)) {
        queued.retryIn(0);
        start(false);
      }
    }
  }

  /** Gives turns again after `close` (a dispatcher started again). */
  reopen(): void {
    this.closed = false;
  }

  /** Keeps the queue from handing the deliveries waiting here to another node. */
  stillWorking(): void {
    for (const lane of this.lanes.values()) for (const { queued } of lane.waiting) queued.working();
  }

  /** Starts waiting deliveries while the limits allow, one per endpoint per round. */
  private startWaiting(): void {
    let progress = true;
    while (progress && this.sending < this.limits.maxInFlight && !this.closed) {
      progress = false;
      for (const lane of this.lanes.values()) {
        if (this.sending >= this.limits.maxInFlight) break;
        if (lane.sending >= this.limits.maxInFlightPerEndpoint || !lane.waiting.length) continue;
        lane.sending++;
        this.sending++;
        lane.waiting.shift()!.start(true);
        progress = true;
      }
    }
  }

  /** How many of an endpoint's deliveries may wait here for its turn. */
  private waitingRoom(key: string): number {
    const pace = this.recentPace(key);
    // Slow on average, in slow answers spanning `SLOW_FOR_MS`.
    if (!pace?.slow || pace.slow.last - pace.slow.since < SLOW_FOR_MS) return this.limits.maxWaitingPerEndpoint;
    const takes = Math.floor((MAX_BACKLOG_MS / pace.averageMs) * this.limits.maxInFlightPerEndpoint);
    return Math.min(this.limits.maxWaitingPerEndpoint, Math.max(1, takes));
  }

  /** The endpoint's pace, unless it has not answered for `FORGET_AFTER_MS`. */
  private recentPace(key: string): Pace | undefined {
    const pace = this.paces.get(key);
    return pace && this.clock.now() - pace.heardAt <= FORGET_AFTER_MS ? pace : undefined;
  }

  /** About how long the deliveries waiting in `lane` take to go: a delivery handed back returns after them. */
  private deferMs(key: string, lane: Lane): number {
    const estimate = (lane.waiting.length / this.limits.maxInFlightPerEndpoint) * (this.paces.get(key)?.averageMs ?? 0);
    return Math.min(MAX_DEFER_MS, Math.max(MIN_DEFER_MS, Math.round(estimate)));
  }
}
