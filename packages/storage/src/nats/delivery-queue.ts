import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type Consumer, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { SvcError } from '@svc/protocol';
import { STORAGE_RETRY_AFTER_SECONDS } from '../duckdb/duckdb-database';
import type { NewDelivery } from '../event-store';
import type { QueuedDelivery, WebhookQueue } from '../webhook-queue';
import { ensureDurableConsumer } from './durable-consumer';
import { ensureStream } from './event-log';

export const WEBHOOK_STREAM = 'WEBHOOKS';
/** Deliveries are published on `svc.webhooks.<tenantSeq>`. */
export const WEBHOOK_SUBJECT_PREFIX = 'svc.webhooks';
/** The durable pull consumer every node's dispatcher shares. */
export const WEBHOOK_CONSUMER = 'dispatcher';
/** A delivery published again with the same id within this window is dropped by JetStream. */
export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60 * 1000;
/**
 * A message not answered within this time is handed to another dispatcher: longer than one
 * attempt (15 s timeout) and its logging; a dispatcher holding a message longer says `working`.
 */
export const DEFAULT_ACK_WAIT_MS = 60_000;
/**
 * Messages handed out and not yet answered, over all dispatchers: no limit. A delivery waiting
 * in its retry delay (NAK with delay) counts as handed out, so any limit would let one dead
 * endpoint's backlog stop the deliveries of every tenant; each node bounds what it holds itself.
 */
export const DEFAULT_MAX_ACK_PENDING = -1;
/** Publications waiting for their acknowledgement at once. */
const PUBLISH_WINDOW = 1_000;
const NANOS_PER_MS = 1_000_000;

export interface DeliveryQueueOptions {
  /** Copies of the stream: 3 in production, 1 (the default) in tests and on one server. */
  replicas?: number;
  /** Default `DEFAULT_DUPLICATE_WINDOW_MS`. */
  duplicateWindowMs?: number;
  /** Default `DEFAULT_ACK_WAIT_MS`. */
  ackWaitMs?: number;
  /** Default `DEFAULT_MAX_ACK_PENDING`. */
  maxAckPending?: number;
}

/** What a message carries: the delivery and the attempts it had before being queued. */
interface QueuedMessage {
  delivery: NewDelivery;
  attempts: number;
}

/**
 * The webhook work queue on JetStream: stream WEBHOOKS (`svc.webhooks.>`, work-queue retention,
 * file storage), one message per delivery with `Nats-Msg-Id` = the delivery's id, so a writer
 * that enqueues the same batch again (after a crash) queues nothing twice. Every node's
 * dispatcher pulls from the one durable consumer; a message leaves the stream when acknowledged.
 */
export class DeliveryQueue implements WebhookQueue {
  private constructor(
    private readonly js: JetStreamClient,
    private readonly consumer: Consumer,
  ) {}

  /**
   * Creates the stream and consumer if missing (several nodes may do so at once) and opens the
   * queue. A consumer made with other settings (another node version) gets this node's ack wait
   * and limits where JetStream allows it, and is used as it is otherwise.
   */
  static async open(nc: NatsConnection, options: DeliveryQueueOptions = {}): Promise<DeliveryQueue> {
    try {
      const jsm = await jetstreamManager(nc);
      await ensureStream(jsm, {
        name: WEBHOOK_STREAM,
        subjects: [`${WEBHOOK_SUBJECT_PREFIX}.>`],
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        num_replicas: options.replicas ?? 1,
        duplicate_window: (options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS) * NANOS_PER_MS,
      });
      await ensureDurableConsumer(jsm, WEBHOOK_STREAM, {
        durable_name: WEBHOOK_CONSUMER,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: (options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS) * NANOS_PER_MS,
        // The dispatcher decides when a delivery is given up (the retry schedule).
        max_deliver: -1,
        max_ack_pending: options.maxAckPending ?? DEFAULT_MAX_ACK_PENDING,
      });
      const js = jetstream(nc);
      return new DeliveryQueue(js, await js.consumers.get(WEBHOOK_STREAM, WEBHOOK_CONSUMER));
    } catch (error) {
      throw unavailable(error);
    }
  }

  enqueue(deliveries: NewDelivery[]): Promise<void> {
    return this.publish(deliveries.map((delivery) => ({ message: { delivery: plain(delivery), attempts: 0 }, msgID: delivery.id })));
  }

  requeue(deliveries: Array<{ delivery: NewDelivery; attempts: number }>, at: number): Promise<void> {
    // The delivery's own id would be taken for a duplicate of its first queuing within the window.
    return this.publish(deliveries.map(({ delivery, attempts }) => ({ message: { delivery: plain(delivery), attempts }, msgID: `${delivery.id}:${at}` })));
  }

  async *pull(max: number, expiresMs: number, signal?: AbortSignal): AsyncIterable<QueuedDelivery> {
    if (signal?.aborted) return;
    let messages;
    try {
      // The server refuses pull requests that expire in under a second.
      messages = await this.consumer.fetch({ max_messages: max, expires: Math.max(expiresMs, 1_000) });
    } catch (error) {
      throw unavailable(error);
    }
    const stop = () => void messages.close();
    signal?.addEventListener('abort', stop, { once: true });
    try {
      for await (const message of messages) {
        const queued = toQueued(message);
        if (queued) yield queued;
      }
    } finally {
      signal?.removeEventListener('abort', stop);
    }
  }

  /** Deliveries in the queue, waiting or handed out and not yet answered (the queue-depth gauge). */
  async depth(): Promise<number> {
    try {
      const info = await this.consumer.info();
      return info.num_pending + info.num_ack_pending;
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** Publishes with at most `PUBLISH_WINDOW` acknowledgements awaited at once; resolves when all are stored. */
  private async publish(items: Array<{ message: QueuedMessage; msgID: string }>): Promise<void> {
    try {
      for (let i = 0; i < items.length; i += PUBLISH_WINDOW) {
        await Promise.all(
          items.slice(i, i + PUBLISH_WINDOW).map(({ message, msgID }) =>
            this.js.publish(`${WEBHOOK_SUBJECT_PREFIX}.${message.delivery.tenantSeq}`, JSON.stringify(message), { msgID }),
          ),
        );
      }
    } catch (error) {
      throw unavailable(error);
    }
  }
}

/** The fields of a new delivery only (a logged record carries its state too). */
function plain(d: NewDelivery): NewDelivery {
  return { id: d.id, tenantSeq: d.tenantSeq, endpointId: d.endpointId, eventId: d.eventId, event: d.event, userId: d.userId, payload: d.payload, createdAt: d.createdAt };
}

function toQueued(message: JsMsg): QueuedDelivery | null {
  let body: QueuedMessage;
  try {
    body = message.json<QueuedMessage>();
  } catch {
    // Not one of ours: nothing can be done with it.
    message.term();
    return null;
  }
  return {
    delivery: body.delivery,
    attemptsBefore: body.attempts,
    redelivered: message.info.deliveryCount > 1,
    done: () => message.ack(),
    retryIn: (delayMs) => message.nak(Math.max(0, Math.round(delayMs))),
    working: () => message.working(),
  };
}

function unavailable(error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  return new SvcError('storage_unavailable', 'The service cannot use its webhook queue right now. Retry later.', {
    cause: error,
    headers: { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
  });
}
