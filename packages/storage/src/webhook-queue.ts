import type { NewDelivery } from './event-store';
import type { AttemptOutcome, DeliveryStatus } from './webhook-delivery-store';

/** A delivery handed to one dispatcher by the shared work queue, until it says what became of it. */
export interface QueuedDelivery {
  delivery: NewDelivery;
  /** Attempts logged before the message was queued: 0 when new, the count so far when replayed. */
  attemptsBefore: number;
  /** Handed out before (a retry, a deferral, or a dispatcher that stopped before answering). */
  redelivered: boolean;
  /** Finished with: delivered, failed for good or dropped; the queue forgets it. */
  done(): void;
  /** Hand it out again (to any dispatcher) after `delayMs`. */
  retryIn(delayMs: number): void;
  /** Still being worked on: keeps the queue from handing it to another dispatcher for now. */
  working(): void;
}

/**
 * The work queue of webhook deliveries shared by every node (cluster mode): at-least-once, each
 * message handed to one dispatcher at a time and redelivered if not answered in time.
 */
export interface WebhookQueue {
  /** Queues new deliveries; one already queued (same id, recently) is not queued again. */
  enqueue(deliveries: NewDelivery[]): Promise<void>;
  /** Queues deliveries again (replay), each with the attempts it has had; `at` tells this replay apart from earlier ones. */
  requeue(deliveries: Array<{ delivery: NewDelivery; attempts: number }>, at: number): Promise<void>;
  /** Up to `max` deliveries as they come, for at most `expiresMs` or until `signal` aborts. */
  pull(max: number, expiresMs: number, signal?: AbortSignal): AsyncIterable<QueuedDelivery>;
}

/** A delivery's current state in the attempt log. */
export interface LoggedState {
  status: DeliveryStatus;
  attempts: number;
}

/** The append-only attempt log a queue-driven dispatcher writes (cluster mode). */
export interface DeliveryAttemptLog {
  /**
   * Appends outcomes in one transaction, adding each delivery to the log if new. A delivery
   * already finished (delivered, or failed by its endpoint's disabling) gets no row.
   */
  appendAttempts(entries: Array<{ delivery: NewDelivery; outcome: AttemptOutcome }>): Promise<void>;
  /** The current state of those of `ids` that are in the log. */
  latestStates(ids: string[]): Promise<Map<string, LoggedState>>;
}
