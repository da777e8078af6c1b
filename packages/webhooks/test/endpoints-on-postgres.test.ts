import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { openEmbeddedStorage, PgDatabase, PgWebhookEndpointStore, type Storage } from '@svc/storage';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../storage/test/postgres-server';
import { WebhookDispatcher } from '../src/dispatcher';
import type { SendResult, WebhookSender } from '../src/http-sender';
import { WebhookService } from '../src/webhook-service';
import { eventRows, testTenant } from './split-fixture';

const available = postgresAvailable();

const tenant = testTenant('split', 'Split');
const eventRow = eventRows(tenant);

class RecordingSender implements WebhookSender {
  readonly sent: Array<{ url: string; id: string }> = [];
  async send(url: string, headers: Record<string, string>): Promise<SendResult> {
    this.sent.push({ url, id: headers['webhook-id']! });
    return { statusCode: 200, error: null, retryAfter: undefined, latencyMs: 1 };
  }
  async close(): Promise<void> {}
}

/** Endpoints in PostgreSQL, deliveries beside the events in DuckDB: the split cluster mode runs. */
describe.runIf(available)('webhooks with endpoints on PostgreSQL and deliveries on DuckDB', () => {
  let server: PostgresServer;
  let pg: PgDatabase;
  let duck: Storage;
  let endpoints: PgWebhookEndpointStore;
  const dispatchers: WebhookDispatcher[] = [];
  const clock = new ManualClock(1_767_000_000_000);

  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    for (const d of dispatchers.splice(0)) await d.stop();
    await duck?.close();
    await pg?.close();
  });

  const open = async () => {
    pg = await PgDatabase.open(await server.createDatabase());
    endpoints = new PgWebhookEndpointStore(pg);
    duck = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-split-')));
  };

  /** A process: its service and dispatcher, started as the server starts them. */
  const startNode = async (sender: WebhookSender) => {
    const service = new WebhookService(endpoints, duck.webhookDeliveries, sender, { allowPrivate: true }, clock);
    const dispatcher = new WebhookDispatcher(duck.webhookDeliveries, service, sender, clock);
    dispatchers.push(dispatcher);
    await service.start(dispatcher);
    await dispatcher.start(60_000);
    await dispatcher.runDue();
    return { service, dispatcher };
  };

  /** Events accepted for the tenant: deliveries planned and committed with them in DuckDB. */
  const accept = async (service: WebhookService, count: number) => {
    const rows = Array.from({ length: count }, eventRow);
    const deliveries = service.plan(tenant, rows);
    await duck.events.commit({ events: rows, rejects: [], deliveries });
    return deliveries;
  };

  it('routes and logs deliveries of an endpoint stored in PostgreSQL', async () => {
    await open();
    const sender = new RecordingSender();
    const { service, dispatcher } = await startNode(sender);
    const endpoint = await service.create(tenant, { url: 'http://127.0.0.1:9/in', eventTypes: ['poll.voted'] });
    expect(await endpoints.getEndpoint(tenant.seq, endpoint.id)).toEqual(endpoint);
    const deliveries = await accept(service, 2);
    service.accepted(deliveries);
    await dispatcher.runDue();
    expect(sender.sent.map((s) => s.url)).toEqual(['http://127.0.0.1:9/in', 'http://127.0.0.1:9/in']);
    const log = await service.deliveries(tenant, endpoint.id, { limit: 10 });
    expect(log.data.map((d) => d.status)).toEqual(['delivered', 'delivered']);
  });

  it('deletes an endpoint from PostgreSQL and then its pending deliveries from DuckDB', async () => {
    await open();
    const { service } = await startNode(new RecordingSender());
    const endpoint = await service.create(tenant, { url: 'http://127.0.0.1:9/in' });
    const deliveries = await accept(service, 3);
    await service.remove(tenant, endpoint.id);
    expect(await endpoints.getEndpoint(tenant.seq, endpoint.id)).toBeNull();
    expect(await duck.webhookDeliveries.pendingAmong(deliveries.map((d) => d.id))).toEqual(new Set());
  });

  it('never sends the deliveries left by a stop between deleting an endpoint and its deliveries, and removes them', async () => {
    await open();
    const before = await startNode(new RecordingSender());
    const deleted = await before.service.create(tenant, { url: 'http://127.0.0.1:9/deleted' });
    const kept = await before.service.create(tenant, { url: 'http://127.0.0.1:9/kept' });
    const deliveries = await accept(before.service, 2);
    // The first step of remove() only, as if the process stopped right after it.
    expect(await endpoints.deleteEndpoint(tenant.seq, deleted.id)).toBe(true);
    for (const d of dispatchers.splice(0)) await d.stop();

    const sender = new RecordingSender();
    const after = await startNode(sender);
    await after.dispatcher.runDue();
    expect(sender.sent.map((s) => s.url)).toEqual(['http://127.0.0.1:9/kept', 'http://127.0.0.1:9/kept']);
    const ofDeleted = deliveries.filter((d) => d.endpointId === deleted.id).map((d) => d.id);
    expect(ofDeleted).toHaveLength(2);
    expect(await duck.webhookDeliveries.pendingAmong(ofDeleted)).toEqual(new Set());
    expect((await after.service.deliveries(tenant, kept.id, { limit: 10 })).data.map((d) => d.status)).toEqual(['delivered', 'delivered']);
  });

  it('keeps, unsent, the pending deliveries of an endpoint disabled before the process started', async () => {
    await open();
    const before = await startNode(new RecordingSender());
    const endpoint = await before.service.create(tenant, { url: 'http://127.0.0.1:9/off' });
    const deliveries = await accept(before.service, 2);
    // Disabled in PostgreSQL, its pending deliveries not yet failed: the process stopped in between.
    await endpoints.updateEndpoint({ ...endpoint, enabled: false, disabledReason: 'Disabled by an administrator.' });
    for (const d of dispatchers.splice(0)) await d.stop();

    const sender = new RecordingSender();
    const after = await startNode(sender);
    await after.dispatcher.runDue();
    expect(sender.sent).toEqual([]);
    expect(await duck.webhookDeliveries.pendingAmong(deliveries.map((d) => d.id))).toEqual(new Set(deliveries.map((d) => d.id)));
  });
});
