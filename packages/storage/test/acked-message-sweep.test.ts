import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { sweepAckedMessages } from '../src/nats/acked-message-sweep';
import { natsAvailable, startNats, type NatsServer } from './nats-server';

const available = natsAvailable();
const queue = { stream: 'SWEPT', consumer: 'worker' };

describe.runIf(available)('sweep of acknowledged messages a stream kept', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(async () => {
    await withManager((jsm) => jsm.streams.delete(queue.stream).catch(() => false));
  });

  async function withManager<T>(work: (jsm: JetStreamManager, nc: NatsConnection) => Promise<T>): Promise<T> {
    const nc = await connect({ servers: server.url, maxReconnectAttempts: 0 });
    try {
      return await work(await jetstreamManager(nc), nc);
    } finally {
      await nc.close().catch(() => undefined);
    }
  }

  async function createQueue(jsm: JetStreamManager, retention: RetentionPolicy): Promise<void> {
    await jsm.streams.add({ name: queue.stream, subjects: ['swept.>'], retention, storage: StorageType.File });
    await jsm.consumers.add(queue.stream, { durable_name: queue.consumer, ack_policy: AckPolicy.Explicit, ack_wait: 60_000_000_000 });
  }

  const state = (jsm: JetStreamManager) =>
    Promise.all([jsm.streams.info(queue.stream), jsm.consumers.info(queue.stream, queue.consumer)]).then(([s, c]) => ({
      messages: s.state.messages,
      firstSeq: s.state.first_seq,
      lastSeq: s.state.last_seq,
      ackFloor: c.ack_floor.stream_seq,
      pending: c.num_pending,
      ackPending: c.num_ack_pending,
    }));

  it('removes the messages at or below the ack floor and keeps those after it, which are delivered as before', async () => {
    // The state a SIGKILLed nats-server 2.9 may come back with (seen in a standalone run in about
    // one crash in three, but not reliably enough for a test): acknowledged messages still in
    // the stream, at or below the consumer's ack floor. A stream with limits retention keeps
    // acknowledged messages, so it gives that state on purpose; the sweep reads only the ack
    // floor and the stream's state, whatever the retention.
    await withManager(async (jsm, nc) => {
      await createQueue(jsm, RetentionPolicy.Limits);
      const js = jetstream(nc);
      for (let n = 1; n <= 10; n++) await js.publish('swept.1', `m${n}`);
      const consumer = await js.consumers.get(queue.stream, queue.consumer);
      const first = await consumer.fetch({ max_messages: 6, expires: 1_000 });
      for await (const message of first) await message.ackAck();
      await vi.waitFor(async () => expect(await state(jsm)).toMatchObject({ messages: 10, ackFloor: 6 }));

      expect(await sweepAckedMessages(jsm, queue)).toBe(6);
      expect(await state(jsm)).toMatchObject({ messages: 4, firstSeq: 7, ackFloor: 6, pending: 4 });
      const rest: string[] = [];
      const next = await consumer.fetch({ max_messages: 10, expires: 1_000 });
      for await (const message of next) {
        rest.push(message.string());
        await message.ackAck();
      }
      expect(rest).toEqual(['m7', 'm8', 'm9', 'm10']);
      await vi.waitFor(async () => expect(await state(jsm)).toMatchObject({ ackFloor: 10 }));
      expect(await sweepAckedMessages(jsm, queue)).toBe(4);
      expect(await sweepAckedMessages(jsm, queue)).toBe(0);
    });
  });

  it('leaves a stream alone while another consumer reads it too', async () => {
    await withManager(async (jsm, nc) => {
      await createQueue(jsm, RetentionPolicy.Limits);
      await jsm.consumers.add(queue.stream, { durable_name: 'other', ack_policy: AckPolicy.Explicit });
      const js = jetstream(nc);
      for (let n = 1; n <= 3; n++) await js.publish('swept.1', `m${n}`);
      const consumer = await js.consumers.get(queue.stream, queue.consumer);
      for await (const message of await consumer.fetch({ max_messages: 3, expires: 1_000 })) await message.ackAck();
      await vi.waitFor(async () => expect(await state(jsm)).toMatchObject({ ackFloor: 3 }));
      expect(await sweepAckedMessages(jsm, queue)).toBe(0);
      expect(await state(jsm)).toMatchObject({ messages: 3 });
    });
  });
});
