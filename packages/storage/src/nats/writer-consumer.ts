import { AckPolicy, DeliverPolicy, jetstream, type Consumer, type ConsumerConfig } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { EVENTS_STREAM, type EventLog } from './event-log';

/** The durable pull consumer all nodes' writers share. */
export const WRITER_CONSUMER = 'writer';
/** Most messages delivered and not yet acknowledged, over all writers. */
const MAX_ACK_PENDING = 20_000;

/**
 * The consumer WRITER_CONSUMER of the stream EVENTS, created when missing (safe when several
 * nodes start at once) and given `ackWaitMs` when it had another one. Explicit acks and no
 * limit on deliveries: an event is never given up, only written or dropped on purpose.
 */
export async function writerConsumer(log: EventLog, ackWaitMs: number): Promise<Consumer> {
  const jsm = log.manager();
  const config: Partial<ConsumerConfig> = {
    durable_name: WRITER_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ackWaitMs),
    max_ack_pending: MAX_ACK_PENDING,
    max_deliver: -1,
  };
  const existing = await jsm.consumers.info(EVENTS_STREAM, WRITER_CONSUMER).catch(() => null);
  if (!existing) {
    // Another node may create it meanwhile: then it is there to use.
    await jsm.consumers.add(EVENTS_STREAM, config).catch((error: unknown) => jsm.consumers.info(EVENTS_STREAM, WRITER_CONSUMER).catch(() => Promise.reject(error)));
  } else if (existing.config.ack_wait !== config.ack_wait) {
    await jsm.consumers.update(EVENTS_STREAM, WRITER_CONSUMER, { ack_wait: config.ack_wait });
  }
  return jetstream(log.connection).consumers.get(EVENTS_STREAM, WRITER_CONSUMER);
}
