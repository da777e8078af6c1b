import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryQueue, hashUserId, PgDatabase, PgDeletionJobStore, PgErasureTombstones, PgWebhookDeliveryStore, PgWebhookEndpointStore, WEBHOOK_STREAM } from '@svc/storage';
import { WebhookReceiver } from '../../../apps/server/test/webhook-receiver';
import { natsAvailable, startNats, type NatsServer } from '../../storage/test/nats-server';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../storage/test/postgres-server';
import { HttpWebhookSender } from '../src/http-sender';
import { QueueDispatcher } from '../src/queue-dispatcher';
import { RETRY_DELAYS_MS, RETRY_JITTER } from '../src/retry-schedule';
import { WebhookService } from '../src/webhook-service';
import { eventRows, testTenant } from './split-fixture';

const available = natsAvailable() && postgresAvailable();
const tenant = testTenant('queued', 'Queued');
const eventRow = eventRows(tenant);
/** With the jitter's random source at 0, the second attempt waits its delay less 20%. */
const SECOND_ATTEMPT_DELAY_MS = RETRY_DELAYS_MS[1]! * (1 - RETRY_JITTER);

describe.runIf(available)('webhooks from the JetStream work queue, logged in PostgreSQL', () => {
  let nats: NatsServer;
  let postgres: PostgresServer;
  const receiver = new WebhookReceiver();
  const closing: Array<() => Promise<unknown> | void> = [];

  beforeAll(async () => {
    [nats, postgres] = await Promise.all([startNats(), startPostgres(), receiver.start()]);
  });
  afterAll(async () => {
    await Promise.allSettled([nats?.stop(), postgres?.stop(), receiver.stop()]);
  });
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
    receiver.received.length = 0;
    receiver.respond = (res) => res.writeHead(200).end('ok');
  });

  /** A fresh database and stream, shared by the nodes `node()` starts. */
  const cluster = async () => {
    const url = await postgres.createDatabase();
    const nc = await connect({ servers: nats.url });
    await (await jetstreamManager(nc)).streams.delete(WEBHOOK_STREAM).catch(() => false);
    await nc.close();
    return url;
  };

  /** One node: its connections, service and dispatcher, started; `sent` counts its requests. */
  const node = async (url: string, options: { ackWaitMs?: number; hang?: boolean } = {}) => {
    const nc: NatsConnection = await connect({ servers: nats.url });
    const db = await PgDatabase.open(url, { poolSize: 4 });
    const queue = await DeliveryQueue.open(nc, { ackWaitMs: options.ackWaitMs });
    const log = new PgWebhookDeliveryStore(db, queue);
    const tombstones = new PgErasureTombstones(db, 60_000);
    await tombstones.start();
    const http = new HttpWebhookSender(true);
    const counted = { sent: 0 };
    // `hang`: a node that takes deliveries and never gets an answer (it is about to die).
    const sender = {
      send: (...args: Parameters<HttpWebhookSender['send']>) => (counted.sent++, options.hang ? new Promise<never>(() => {}) : http.send(...args)),
      close: () => http.close(),
    };
    const service = new WebhookService(new PgWebhookEndpointStore(db), log, sender, { allowPrivate: true });
    const dispatcher = new QueueDispatcher(queue, log, service, sender, { random: () => 0, erased: (d) => tombstones.erased(d) });
    await service.start(dispatcher);
    dispatcher.start();
    const crash = () => nc.close();
    closing.push(async () => {
      // Its attempts never end: stop pulling without waiting for them.
      if (options.hang) return Promise.all([void dispatcher.stop(), tombstones.stop(), nc.close(), db.close()]);
      await dispatcher.stop();
      tombstones.stop();
      await sender.close();
      await nc.close();
      await db.close();
    });
    return { service, queue, log, db, counted, tombstones, crash };
  };

  const streamMessages = async () => {
    const nc = await connect({ servers: nats.url });
    try {
      return (await (await jetstreamManager(nc)).streams.info(WEBHOOK_STREAM)).state.messages;
    } finally {
      await nc.close();
    }
  };

  /** Deliveries of `count` new events to the tenant's endpoints, queued as the event writer queues them. */
  const accept = async (n: Awaited<ReturnType<typeof node>>, count: number, userId: string | null = null) => {
    const deliveries = n.service.plan(tenant, Array.from({ length: count }, () => ({ ...eventRow(), userId })));
    await n.queue.enqueue(deliveries);
    return deliveries;
  };

  it('delivers every queued delivery, signed, to a verifying receiver, the nodes sharing the work, and logs each as delivered', async () => {
    const url = await cluster();
    const [a, b] = [await node(url), await node(url)];
    const endpoint = await a.service.create(tenant, { url: receiver.url });
    const deliveries = await accept(a, 300);
    await expect.poll(() => new Set(receiver.ids()).size, { timeout: 20_000 }).toBe(300);
    const verifier = new Webhook(endpoint.secret);
    for (const request of receiver.received) {
      const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
      expect(verifier.verify(request.body, headers)).toMatchObject({ event: 'poll.voted' });
    }
    expect(new Set(receiver.ids())).toEqual(new Set(deliveries.map((d) => d.eventId)));
    // Node B had not heard of the endpoint made on node A: it looked it up.
    expect(a.counted.sent).toBeGreaterThan(0);
    expect(b.counted.sent).toBeGreaterThan(0);
    await expect.poll(streamMessages).toBe(0);
    await expect.poll(async () => (await b.service.deliveries(tenant, endpoint.id, { limit: 500, status: 'delivered' })).data.length).toBe(300);
  }, 40_000);

  it("retries a refused delivery after the schedule's delay, and replays it through the queue", async () => {
    const url = await cluster();
    const a = await node(url);
    const endpoint = await a.service.create(tenant, { url: receiver.url });
    let answered = 0;
    receiver.respond = (res) => (answered++ === 0 ? res.writeHead(503).end() : res.writeHead(200).end('ok'));
    const [d] = await accept(a, 1);
    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(2);
    const [first, second] = receiver.received;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(SECOND_ATTEMPT_DELAY_MS - 100);
    await expect.poll(() => a.service.deliveries(tenant, endpoint.id, { limit: 5 }).then((r) => r.data[0]?.status)).toBe('delivered');
    expect((await a.log.getDelivery(tenant.seq, d!.id))).toMatchObject({ attempts: 2, lastStatusCode: 200 });
    expect(await a.service.replay(tenant, endpoint.id, { deliveryId: d!.id })).toBe(1);
    await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(3);
    expect(receiver.ids()).toEqual([d!.eventId, d!.eventId, d!.eventId]);
    await expect.poll(() => a.log.getDelivery(tenant.seq, d!.id).then((r) => r?.attempts)).toBe(3);
    // A test message is sent at once, not queued, and logged beside the deliveries, newest first.
    const test = await a.service.sendTest(tenant, endpoint.id);
    expect(test).toMatchObject({ statusCode: 200 });
    const listed = await a.service.deliveries(tenant, endpoint.id, { limit: 5 });
    expect(listed.data.map((r) => [r.event, r.status])).toEqual([['webhook.test', 'delivered'], ['poll.voted', 'delivered']]);
  }, 30_000);

  it("drops unsent the queued deliveries of an erased user, and of a deleted endpoint; fails those of a disabled one, replayable", async () => {
    const url = await cluster();
    const a = await node(url);
    const endpoint = await a.service.create(tenant, { url: receiver.url });
    await new PgDeletionJobStore(a.db).create({
      id: 'del_ann', tenantSeq: tenant.seq, userHash: hashUserId('ann'), status: 'pending', requestedAt: Date.now() + 60_000,
      completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null,
    });
    await a.tombstones.refresh();
    const [ann] = await accept(a, 1, 'ann');
    const [bob] = await accept(a, 1, 'bob');
    await expect.poll(() => receiver.ids()).toEqual([bob!.eventId]);
    await expect.poll(streamMessages).toBe(0);
    expect(await a.log.getDelivery(tenant.seq, ann!.id)).toBeNull();

    // Planned while the endpoint was enabled, queued (by the writer) after it was disabled.
    const disabled = a.service.plan(tenant, [eventRow(), eventRow()]);
    await a.service.update(tenant, endpoint.id, { enabled: false });
    await a.queue.enqueue(disabled);
    await expect.poll(() => a.service.deliveries(tenant, endpoint.id, { limit: 10, status: 'failed' }).then((r) => r.data.length)).toBe(2);
    expect((await a.log.getDelivery(tenant.seq, disabled[0]!.id))?.lastError).toBe('Endpoint disabled: Disabled by an administrator.');
    await a.service.update(tenant, endpoint.id, { enabled: true });
    expect(await a.service.replay(tenant, endpoint.id, { failedSince: 0 })).toBe(2);
    await expect.poll(() => receiver.ids().length).toBe(3);

    // Planned before the endpoint was deleted, queued after: dropped when met, never logged.
    const [late] = a.service.plan(tenant, [eventRow()]);
    await a.service.remove(tenant, endpoint.id);
    await a.queue.enqueue([late!]);
    await expect.poll(streamMessages).toBe(0);
    expect(receiver.ids()).not.toContain(late!.eventId);
    expect(await a.log.getDelivery(tenant.seq, late!.id)).toBeNull();
  }, 30_000);

  it('delivers on another node what a node took and never answered before it died', async () => {
    const url = await cluster();
    const dying = await node(url, { ackWaitMs: 2_000, hang: true });
    const endpoint = await dying.service.create(tenant, { url: receiver.url });
    const deliveries = await accept(dying, 20);
    await expect.poll(() => dying.counted.sent).toBeGreaterThan(0);
    await dying.crash();
    const survivor = await node(url, { ackWaitMs: 2_000 });
    await expect.poll(() => new Set(receiver.ids()).size, { timeout: 15_000 }).toBe(20);
    expect(new Set(receiver.ids())).toEqual(new Set(deliveries.map((d) => d.eventId)));
    await expect.poll(() => survivor.service.deliveries(tenant, endpoint.id, { limit: 50, status: 'delivered' }).then((r) => r.data.length)).toBe(20);
    await expect.poll(streamMessages).toBe(0);
  }, 30_000);
});
