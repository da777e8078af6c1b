import type { ConsumerConfig, ConsumerUpdateConfig, JetStreamManager } from '@nats-io/jetstream';

/** The settings a node gives its durable consumer and JetStream lets it change on one that exists. */
export type OwnedConsumerSettings = Pick<ConsumerUpdateConfig, 'ack_wait' | 'max_ack_pending' | 'max_deliver'>;

/**
 * Makes sure the durable consumer `config.durable_name` of `stream` exists and has this node's
 * `ack_wait`, `max_ack_pending` and `max_deliver`. Creating one that exists with other settings
 * fails (another ack wait on NATS 2.10 and later, a setting it cannot change such as
 * `max_waiting` on 2.9): a node upgraded with other settings, or nodes of two versions, would
 * then not start. So an existing consumer is updated in those settings only, and used as it is
 * when JetStream refuses the update (the node works with the other settings meanwhile).
 * Safe when several nodes start at once.
 */
export async function ensureDurableConsumer(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string } & OwnedConsumerSettings): Promise<void> {
  const name = config.durable_name;
  const existing = await jsm.consumers.info(stream, name).catch(() => null);
  if (!existing) {
    // Another node may create it meanwhile: then it is there to use.
    await jsm.consumers.add(stream, config).catch((error: unknown) => jsm.consumers.info(stream, name).catch(() => Promise.reject(error)));
    return;
  }
  const changes: OwnedConsumerSettings = {};
  for (const key of ['ack_wait', 'max_ack_pending', 'max_deliver'] as const) {
    if (config[key] !== undefined && existing.config[key] !== config[key]) changes[key] = config[key];
  }
  if (!Object.keys(changes).length) return;
  await jsm.consumers.update(stream, name, changes).catch(async (error: unknown) => {
    // Refused, or a connection failure: the consumer must at least still be there to use.
    await jsm.consumers.info(stream, name).catch(() => Promise.reject(error));
  });
}
