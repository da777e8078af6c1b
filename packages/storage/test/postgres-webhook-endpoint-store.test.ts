import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDatabase, PgWebhookEndpointStore } from '../src';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';
import { webhookEndpoint, webhookEndpointStoreContract } from './webhook-endpoint-store-contract';

const available = postgresAvailable();

describe.runIf(available)('PostgreSQL webhook endpoints', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  webhookEndpointStoreContract('PostgreSQL', async () => {
    const db = await PgDatabase.open(await server.createDatabase());
    return { endpoints: new PgWebhookEndpointStore(db), close: () => db.close() };
  });

  it('keeps the limit when two nodes create endpoints of one tenant at the same moment', async () => {
    const url = await server.createDatabase();
    const [a, b] = await Promise.all([PgDatabase.open(url, { poolSize: 4 }), PgDatabase.open(url, { poolSize: 4 })]);
    const [nodeA, nodeB] = [new PgWebhookEndpointStore(a!), new PgWebhookEndpointStore(b!)];
    const limit = 5;
    for (let round = 0; round < 5; round++) {
      const tenantSeq = 100 + round;
      const created = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? nodeA : nodeB).createEndpoint(webhookEndpoint(tenantSeq, `wh_${i}`), limit)),
      );
      expect(created.filter(Boolean)).toHaveLength(limit);
      expect(await nodeA.listEndpoints(tenantSeq)).toHaveLength(limit);
    }
    // An endpoint one node changes is what the other reads.
    const [first] = await nodeA.listEndpoints(100);
    await nodeB.updateEndpoint({ ...first!, enabled: false, disabledReason: 'Disabled by an administrator.', updatedAt: first!.updatedAt + 1 });
    expect(await nodeA.getEndpoint(100, first!.id)).toMatchObject({ enabled: false, disabledReason: 'Disabled by an administrator.' });
    await Promise.all([a!.close(), b!.close()]);
  });

  it('fails with storage_unavailable while the server is down and serves again once it is back', async () => {
    const db = await PgDatabase.open(await server.createDatabase());
    const endpoints = new PgWebhookEndpointStore(db);
    const endpoint = webhookEndpoint(1, 'wh_down');
    await endpoints.createEndpoint(endpoint, 20);
    await server.kill();
    const unavailable = expect.objectContaining({ code: 'storage_unavailable', status: 503 });
    await expect(endpoints.getEndpoint(1, 'wh_down')).rejects.toEqual(unavailable);
    await expect(endpoints.listEnabledEndpoints()).rejects.toEqual(unavailable);
    await expect(endpoints.createEndpoint(webhookEndpoint(1, 'wh_new'), 20)).rejects.toEqual(unavailable);
    await expect(endpoints.deleteEndpoint(1, 'wh_down')).rejects.toEqual(unavailable);
    await server.restart();
    expect(await endpoints.listEndpoints(1)).toEqual([endpoint]);
    await db.close();
  });
});
