import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { openEmbeddedStorage, PgWebhookEndpointStore } from '@svc/storage';
import { postgresAvailable } from '../../storage/test/postgres-server';
import { ACROSS_NODES_BOUND_MS, postgresNodes, TEST_SETTINGS, within } from '../../storage/test/postgres-nodes';
import { WebhookDispatcher } from '../src/dispatcher';
import type { SendResult, WebhookSender } from '../src/http-sender';
import { WebhookService } from '../src/webhook-service';
import { eventRows, testTenant } from './split-fixture';

const available = postgresAvailable();

const tenant = testTenant('nodes', 'Nodes');
const eventRow = eventRows(tenant);

class RecordingSender implements WebhookSender {
  readonly sent: string[] = [];
  async send(url: string): Promise<SendResult> {
    this.sent.push(url);
    return { statusCode: 200, error: null, retryAfter: undefined, latencyMs: 1 };
  }
  async close(): Promise<void> {}
}


/** Two nodes: endpoints in one PostgreSQL with its change feed, each node's deliveries in its own DuckDB. */
describe.runIf(available)('webhook endpoints changed on one node, on another node', () => {
  const nodes = postgresNodes();
  const clock = new ManualClock(1_767_000_000_000);


  const startNode = async (url: string) => {
    const { db: pg, feed } = await nodes.openNode(url);
    const duck = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-node-')));
    const sender = new RecordingSender();
    const service = new WebhookService(new PgWebhookEndpointStore(pg), duck.webhookDeliveries, sender, { allowPrivate: true }, clock);
    const dispatcher = new WebhookDispatcher(duck.webhookDeliveries, service, sender, clock);
    service.followChanges(feed);
    await service.start(dispatcher);
    // The dispatcher is not started: deliveries go only when a test calls runDue().
    nodes.onClose(async () => {
      await dispatcher.stop();
      await duck.close();
    });
    /** Events accepted on this node: deliveries planned, committed beside them and queued. */
    const accept = async (count: number) => {
      const rows = Array.from({ length: count }, eventRow);
      const deliveries = service.plan(tenant, rows);
      await duck.events.commit({ events: rows, rejects: [], deliveries });
      service.accepted(deliveries);
      return deliveries;
    };
    return { service, dispatcher, sender, duck, accept };
  };

  const twoNodes = async () => {
    const url = await nodes.server().createDatabase();
    return { a: await startNode(url), b: await startNode(url) };
  };

  it('routes on node B, within a second, events to an endpoint created on node A', async () => {
    const { a, b } = await twoNodes();
    const endpoint = await a.service.create(tenant, { url: 'http://127.0.0.1:9/new' });
    await within(ACROSS_NODES_BOUND_MS, () => b.service.endpoint(tenant.seq, endpoint.id) !== undefined);
    expect(await b.accept(1)).toHaveLength(1);
    await b.dispatcher.runDue();
    expect(b.sender.sent).toEqual(['http://127.0.0.1:9/new']);
  });

  it('stops delivering from node B, within a second, to an endpoint disabled on node A, and fails what B had pending', async () => {
    const { a, b } = await twoNodes();
    const endpoint = await a.service.create(tenant, { url: 'http://127.0.0.1:9/off' });
    await within(ACROSS_NODES_BOUND_MS, () => b.service.endpoint(tenant.seq, endpoint.id) !== undefined);
    // Accepted on B, not sent yet.
    const pending = await b.accept(2);
    await a.service.update(tenant, endpoint.id, { enabled: false });
    await within(ACROSS_NODES_BOUND_MS, () => b.service.endpoint(tenant.seq, endpoint.id)?.enabled === false);
    await b.service.changesApplied();
    await b.dispatcher.runDue();
    expect(b.sender.sent).toEqual([]);
    expect(b.service.plan(tenant, [eventRow()])).toEqual([]);
    expect(await b.duck.webhookDeliveries.pendingAmong(pending.map((d) => d.id))).toEqual(new Set());
    const log = await b.service.deliveries(tenant, endpoint.id, { limit: 10 });
    expect(log.data.map((d) => d.status)).toEqual(['failed', 'failed']);
  });

  it('forgets on node B, within a second, an endpoint deleted on node A, with B’s pending deliveries to it', async () => {
    const { a, b } = await twoNodes();
    const endpoint = await a.service.create(tenant, { url: 'http://127.0.0.1:9/gone' });
    await within(ACROSS_NODES_BOUND_MS, () => b.service.endpoint(tenant.seq, endpoint.id) !== undefined);
    const pending = await b.accept(2);
    await a.service.remove(tenant, endpoint.id);
    await within(ACROSS_NODES_BOUND_MS, () => b.service.endpoint(tenant.seq, endpoint.id) === undefined);
    await b.service.changesApplied();
    await b.dispatcher.runDue();
    expect(b.sender.sent).toEqual([]);
    expect(await b.duck.webhookDeliveries.pendingAmong(pending.map((d) => d.id))).toEqual(new Set());
  });

  it('signs on node B, within a second, with the secret rotated on node A', async () => {
    const { a, b } = await twoNodes();
    const endpoint = await a.service.create(tenant, { url: 'http://127.0.0.1:9/rotated' });
    await within(ACROSS_NODES_BOUND_MS, () => b.service.endpoint(tenant.seq, endpoint.id) !== undefined);
    const rotated = await a.service.rotateSecret(tenant, endpoint.id);
    await within(ACROSS_NODES_BOUND_MS, () => b.service.endpoint(tenant.seq, endpoint.id)?.secret === rotated.secret);
    expect(b.service.endpoint(tenant.seq, endpoint.id)?.previousSecret).toBe(endpoint.secret);
  });

  it('reads every enabled endpoint again after its feed was cut off from the server', async () => {
    const { a, b } = await twoNodes();
    const endpoint = await a.service.create(tenant, { url: 'http://127.0.0.1:9/missed' });
    await within(ACROSS_NODES_BOUND_MS, () => b.service.endpoint(tenant.seq, endpoint.id) !== undefined);
    // Changed behind every node's back (no notice), then the feeds reconnect.
    const store = (a.service as unknown as { endpointStore: PgWebhookEndpointStore }).endpointStore;
    await store.deleteEndpoint(tenant.seq, endpoint.id);
    expect(b.service.endpoint(tenant.seq, endpoint.id)).toBeDefined();
    await nodes.server().kill();
    await nodes.server().restart();
    await within(15_000, () => b.service.endpoint(tenant.seq, endpoint.id) === undefined);
  });
});
