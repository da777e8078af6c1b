import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectNats, NatsBus } from '../src';
import { natsAvailable, startNatsCluster, type NatsCluster } from './nats-server';

const available = natsAvailable();

describe.skipIf(!available)('a 3-server NATS cluster for tests', () => {
  let cluster: NatsCluster;
  const connections: NatsConnection[] = [];
  beforeAll(async () => {
    cluster = await startNatsCluster(3);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(connections.map((connection) => connection.close()));
    await cluster?.stop();
  });

  it('keeps a stream in three replicas, one on each server, and a killed server rejoins on restart', async () => {
    expect(new Set(cluster.nodes.map((node) => node.url)).size).toBe(3);
    expect(cluster.urls.split(',')).toEqual(cluster.nodes.map((node) => node.url));
    const connection = await connectNats(cluster.urls);
    connections.push(connection);
    const jsm = await jetstreamManager(connection);
    const info = await jsm.streams.add({ name: 'R3TEST', subjects: ['r3test.>'], num_replicas: 3, storage: StorageType.File });
    expect(info.config.num_replicas).toBe(3);
    const replicaNames = async () => {
      const { cluster: placement } = await jsm.streams.info('R3TEST');
      return [placement?.leader, ...(placement?.replicas ?? []).map((replica) => replica.name)].sort();
    };
    await expect.poll(replicaNames, { timeout: 10_000 }).toEqual(['n1', 'n2', 'n3']);

    await cluster.nodes[2]!.kill();
    await cluster.nodes[2]!.restart();
    const again = await connectNats(cluster.nodes[2]!.url);
    connections.push(again);
    expect((await (await jetstreamManager(again)).streams.info('R3TEST')).config.num_replicas).toBe(3);
  }, 60_000);

  /** A bus on the second server sending `session.left` to a bus on the first, and the session ids received. */
  const busesOnTwoServers = async () => {
    const [onFirst, onSecond] = [await connectNats(cluster.nodes[0]!.url), await connectNats(cluster.nodes[1]!.url)];
    connections.push(onFirst, onSecond);
    const sender = new NatsBus(onSecond);
    const receiver = new NatsBus(onFirst);
    const received: string[] = [];
    receiver.subscribe('session.left', ({ sessionIds }) => void received.push(...sessionIds));
    await receiver.flush();
    return { sender, received };
  };

  it('carries the bus between nodes connected to different servers, and again after a server dies and its node fails over', async () => {
    // Each node reaches its own server first (the client shuffles a list: one URL each, the others learnt from the cluster).
    const { sender, received } = await busesOnTwoServers();
    await expect
      .poll(async () => {
        await sender.publish('session.left', { tenantSeq: 1, sessionIds: ['before'] });
        return received.includes('before');
      }, { timeout: 5_000 })
      .toBe(true);

    await cluster.nodes[0]!.kill();
    const killedAt = Date.now();
    await expect
      .poll(async () => {
        await sender.publish('session.left', { tenantSeq: 1, sessionIds: ['after'] });
        return received.includes('after');
      }, { timeout: 10_000, interval: 50 })
      .toBe(true);
    console.log(`bus delivery resumed ${Date.now() - killedAt} ms after the receiving node's NATS server died`);
    await cluster.nodes[0]!.restart();
  }, 60_000);

  it('moves a node whose server stops answering without closing its socket (a hung or cut-off host) to another server within seconds, where the bus reaches it again', async () => {
    const { sender, received } = await busesOnTwoServers();
    await cluster.nodes[0]!.freeze();
    const frozenAt = Date.now();
    try {
      // Stale after NATS_PING_INTERVAL_MS × (NATS_MAX_PINGS_OUT + 1) = 6 s, then a live server at once.
      await expect
        .poll(async () => {
          await sender.publish('session.left', { tenantSeq: 1, sessionIds: ['moved'] });
          return received.includes('moved');
        }, { timeout: 10_000, interval: 100 })
        .toBe(true);
      console.log(`bus delivery resumed ${Date.now() - frozenAt} ms after the receiving node's NATS server froze`);
    } finally {
      cluster.nodes[0]!.thaw();
    }
  }, 60_000);
});
