import { AckPolicy, DeliverPolicy, jetstream, type Consumer } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { ensureDurableConsumer } from './durable-consumer';
import { EVENTS_STREAM, type EventLog } from './event-log';

/** The durable pull consumer all nodes' writers share. */
export const WRITER_CONSUMER = 'writer';
/** Most messages delivered and not yet acknowledged, over all writers. */
const MAX_ACK_PENDING = 20_000;

/**
 * The consumer WRITER_CONSUMER of the stream EVENTS, created when missing and given this node's
 * `ackWaitMs` and limits when it had others (`ensureDurableConsumer`). Explicit acks and no
 * limit on deliveries: an event is never given up, only written or dropped on purpose.
 */
export async function writerConsumer(log: EventLog, ackWaitMs: number): Promise<Consumer> {
  const jsm = log.manager();
  const config = {
    durable_name: WRITER_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ackWaitMs),
    max_ack_pending: MAX_ACK_PENDING,
    max_deliver: -1,
  };
  await ensureDurableConsumer(jsm, EVENTS_STREAM, config);
  return jetstream(log.connection).consumers.get(EVENTS_STREAM, WRITER_CONSUMER);
}
