import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryQueue, WEBHOOK_CONSUMER, WEBHOOK_STREAM, type NewDelivery, type QueuedDelivery } from '../src';
import { natsAvailable, startNats, type NatsServer } from './nats-server';

const available = natsAvailable();

const delivery = (n: number): NewDelivery => ({
  id: `0190a6a0-0000-7000-8000-${String(n).padStart(12, '0')}`,
  tenantSeq: 3,
  endpointId: 'wh_a',
  eventId: `0190a6a0-1111-7000-8000-${String(n).padStart(12, '0')}`,
  event: 'poll.voted',
  userId: n % 2 ? 'ann' : null,
  payload: `{"n":${n}}`,
  createdAt: 1_767_000_000_000 + n,
});

/** Everything the queue hands out within `expiresMs` (up to `max`). */
async function pullAll(queue: DeliveryQueue, max: number, expiresMs: number): Promise<QueuedDelivery[]> {
  const got: QueuedDelivery[] = [];
  for await (const queued of queue.pull(max, expiresMs)) got.push(queued);
  return got;
}

describe.runIf(available)('webhook delivery queue on JetStream', () => {
  let server: NatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });
  beforeEach(async () => {
    // One stream per test: the one from the test before goes.
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(WEBHOOK_STREAM).catch(() => false);
  });
  afterEach(async () => {
    // Settles acknowledgements sent without waiting.
    await nc.flush();
  });

  const messagesInStream = async () => (await (await jetstreamManager(nc)).streams.info(WEBHOOK_STREAM)).state.messages;

  it('opens on a consumer made with other settings (an older node, another ack wait) and gives it this node\'s', async () => {
    const jsm = await jetstreamManager(nc);
    await DeliveryQueue.open(nc);
    // Made by hand with another ack wait and limits, and a setting JetStream cannot change on a consumer.
    await jsm.consumers.delete(WEBHOOK_STREAM, WEBHOOK_CONSUMER);
    await jsm.consumers.add(WEBHOOK_STREAM, { durable_name: WEBHOOK_CONSUMER, ack_policy: AckPolicy.Explicit, ack_wait: 5_000 * 1_000_000, max_ack_pending: 100, max_waiting: 10 });
    const queue = await DeliveryQueue.open(nc, { ackWaitMs: 30_000 });
    const { config } = await jsm.consumers.info(WEBHOOK_STREAM, WEBHOOK_CONSUMER);
    expect(config.ack_wait).toBe(30_000 * 1_000_000);
    expect(config.max_ack_pending).toBe(-1);
    await queue.enqueue([delivery(1)]);
    const got = await pullAll(queue, 10, 1_000);
    expect(got.map((q) => q.delivery)).toEqual([delivery(1)]);
    got[0]!.done();
  });

  it('queues each delivery once, even when the writer enqueues its batch again, and forgets it once done', async () => {
    const queue = await DeliveryQueue.open(nc);
    await queue.enqueue([delivery(1), delivery(2), delivery(3)]);
    await queue.enqueue([delivery(1), delivery(2), delivery(3), delivery(4)]);
    expect(await messagesInStream()).toBe(4);
    expect(await queue.depth()).toBe(4);
    const got = await pullAll(queue, 10, 1_000);
    expect(await queue.depth()).toBe(4);
    expect(got.map((q) => q.delivery)).toEqual([1, 2, 3, 4].map(delivery));
    expect(got.every((q) => q.attemptsBefore === 0 && !q.redelivered)).toBe(true);
    for (const q of got) q.done();
    await nc.flush();
    await expect.poll(messagesInStream).toBe(0);
    expect(await queue.depth()).toBe(0);
  });

  it('hands a delivery out again, marked as redelivered, only after the delay it was given back with', async () => {
    const queue = await DeliveryQueue.open(nc);
    await queue.enqueue([delivery(1)]);
    const [first] = await pullAll(queue, 1, 1_000);
    const givenBack = Date.now();
    first!.retryIn(2_000);
    expect(await pullAll(queue, 1, 1_000)).toEqual([]);
    const [again] = await pullAll(queue, 1, 3_000);
    expect(Date.now() - givenBack).toBeGreaterThanOrEqual(1_900);
    expect(again).toMatchObject({ delivery: delivery(1), redelivered: true, attemptsBefore: 0 });
    again!.done();
  });

  it('hands a delivery its dispatcher never answered to another one once the ack wait is over', async () => {
    const queue = await DeliveryQueue.open(nc, { ackWaitMs: 1_000 });
    await queue.enqueue([delivery(1)]);
    const [lost] = await pullAll(queue, 1, 1_000);
    expect(lost).toBeDefined();
    // That dispatcher is gone; another node's pulls it again.
    const other = await DeliveryQueue.open(nc, { ackWaitMs: 1_000 });
    const [again] = await pullAll(other, 1, 3_000);
    expect(again).toMatchObject({ delivery: delivery(1), redelivered: true });
    again!.done();
  });

  it('queues a replay within the duplicate window, with the attempts the delivery had', async () => {
    const queue = await DeliveryQueue.open(nc);
    await queue.enqueue([delivery(1)]);
    for (const q of await pullAll(queue, 1, 1_000)) q.done();
    const logged = { ...delivery(1), status: 'failed', attempts: 10 };
    await queue.requeue([{ delivery: logged, attempts: 10 }], 5_000);
    // The same replay sent twice (a retried request) is queued once.
    await queue.requeue([{ delivery: logged, attempts: 10 }], 5_000);
    const got = await pullAll(queue, 5, 1_000);
    expect(got.map((q) => [q.delivery, q.attemptsBefore])).toEqual([[delivery(1), 10]]);
    got[0]!.done();
  });

  it('fails with storage_unavailable while the server is down, and queues again once it is back', async () => {
    const queue = await DeliveryQueue.open(nc);
    await server.kill();
    try {
      await expect(queue.enqueue([delivery(1)])).rejects.toMatchObject({ code: 'storage_unavailable', status: 503 });
    } finally {
      await server.restart();
    }
    await expect.poll(() => queue.enqueue([delivery(2)]).then(() => true, () => false), { timeout: 15_000, interval: 500 }).toBe(true);
    const got = await pullAll(queue, 5, 1_000);
    expect(got.map((q) => q.delivery.id)).toContain(delivery(2).id);
    for (const q of got) q.done();
  }, 30_000);
});
