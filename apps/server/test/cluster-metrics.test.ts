import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterEnginesAvailable, CLUSTER_API_KEY, startClusterEngines, startClusterNode, type ClusterEngines } from './cluster-engines';
import { adminHeaders, makeBatch, sendUntilAcknowledged, until } from './cluster-client';
import type { ChildServer } from './child-server';
import { dashboardExpressions, exposedNames, metricNamesIn, readDashboard } from './grafana-dashboard';
import { prometheusSamples, type PrometheusSample } from './prometheus-text';
import { WebhookReceiver } from './webhook-receiver';
import { TestViewer } from './ws-client';

const available = clusterEnginesAvailable();
const NODE_ID = 'metrics-node-1';
/** Events ingested before the figures are read. */
const EVENT_COUNT = 300;

describe.runIf(available)('/metrics of a full cluster node', () => {
  let engines: ClusterEngines;
  let node: ChildServer;
  let receiver: WebhookReceiver;
  let body = '';
  let samples: PrometheusSample[] = [];

  const scrape = async () => {
    body = await (await fetch(`${node.url}/metrics`)).text();
    samples = prometheusSamples(body);
    return samples;
  };
  const value = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([key, v]) => s.labels[key] === v)).reduce((sum, s) => sum + s.value, 0);
  /** The writer's lag on EVENTS, or undefined when the scrape had no sample (JetStream did not answer in time). */
  const eventsLag = () =>
    samples.some((s) => s.name === 'svc_jetstream_consumer_lag_messages' && s.labels.stream === 'EVENTS') ? value('svc_jetstream_consumer_lag_messages', { stream: 'EVENTS' }) : undefined;

  beforeAll(async () => {
    [engines, receiver] = await Promise.all([startClusterEngines(), new WebhookReceiver().start()]);
    node = await startClusterNode(await engines.clusterEnv(), { SVC_NODE_ID: NODE_ID, SVC_WEBHOOK_ALLOW_PRIVATE: 'true', SVC_SAMPLE_DATA: 'false' });
    const created = await fetch(`${node.url}/v1/webhooks`, {
      method: 'POST',
      headers: { ...adminHeaders, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    await sendUntilAcknowledged(() => [node.url], makeBatch(EVENT_COUNT, (i) => `metrics-user-${i % 7}`));
    // The writer stored them (its batches reported) and the receiver got a delivery.
    await until('the writer reports its batches', async () => (await scrape(), value('svc_writer_batch_rows_sum') >= EVENT_COUNT), 60_000);
    await until('a webhook delivery arrives', () => receiver.received.length > 0, 60_000);
  }, 150_000);
  afterAll(async () => {
    if (node) {
      node.process.kill('SIGTERM');
      await node.exited;
    }
    await Promise.allSettled([engines?.stop(), receiver?.stop()]);
  });

  it('labels every sample with SVC_NODE_ID', async () => {
    await scrape();
    expect(samples.length).toBeGreaterThan(50);
    expect(samples.filter((s) => s.labels.node !== NODE_ID).map((s) => s.name)).toEqual([]);
  });

  it("reports the writer's batch sizes and ClickHouse insert times", async () => {
    await scrape();
    const batches = value('svc_writer_batch_rows_count');
    expect(batches).toBeGreaterThan(0);
    expect(value('svc_writer_batch_rows_sum')).toBeGreaterThanOrEqual(EVENT_COUNT);
    expect(value('svc_writer_insert_duration_seconds_count')).toBe(batches);
    expect(value('svc_writer_insert_duration_seconds_sum')).toBeGreaterThan(0);
    expect(value('svc_writer_insert_duration_seconds_bucket', { le: '+Inf' })).toBe(batches);
  });

  it('reports the lag of the shared consumers of EVENTS and WEBHOOKS; that of EVENTS is 0 once the writer stored everything', async () => {
    await scrape();
    for (const [stream, consumer] of [['EVENTS', 'writer'], ['WEBHOOKS', 'dispatcher']] as const) {
      for (const state of ['waiting', 'unacknowledged']) {
        expect(samples.some((s) => s.name === 'svc_jetstream_consumer_lag_messages' && s.labels.stream === stream && s.labels.consumer === consumer && s.labels.state === state), `${stream} ${state}`).toBe(true);
      }
    }
    await until('the event stream drained', async () => (await scrape(), eventsLag() === 0), 30_000);
  });

  it('reports the webhook queue the node holds, and its delivery outcomes', async () => {
    await until('the deliveries are answered', async () => (await scrape(), value('svc_webhook_attempts_total', { outcome: 'delivered' }) > 0), 60_000);
    expect(samples.some((s) => s.name === 'svc_webhook_queue_depth')).toBe(true);
  });

  it('measures the round trip of its bus through NATS', async () => {
    await until('a ping came back', async () => (await scrape(), value('svc_bus_round_trip_seconds_count') > 0), 15_000);
    const trips = value('svc_bus_round_trip_seconds_count');
    expect(value('svc_bus_round_trip_seconds_sum') / trips).toBeGreaterThan(0);
    expect(value('svc_bus_round_trip_seconds_sum') / trips).toBeLessThan(1);
  });

  it('counts its WebSocket connections', async () => {
    const viewer = await TestViewer.connect(node.url, { apiKey: CLUSTER_API_KEY, sessionId: 'svc_metrics1', contentId: 'metrics' });
    try {
      await viewer.next((m) => m.type === 'welcome', 15_000);
      await scrape();
      expect(value('svc_ws_connections')).toBe(1);
    } finally {
      viewer.ws.terminate();
    }
  });

  it('counts the messages acknowledged while ClickHouse is away as lag of EVENTS, which drains once it is back', async () => {
    await engines.clickhouse.kill();
    try {
      // Acknowledged by JetStream; the writer's inserts fail meanwhile.
      await sendUntilAcknowledged(() => [node.url], makeBatch(EVENT_COUNT, (i) => `metrics-user-${i % 7}`));
      await until('the lag shows the batch', async () => (await scrape(), (eventsLag() ?? 0) > 0), 15_000);
    } finally {
      await engines.clickhouse.restart();
    }
    // A scrape whose lag read failed has no sample at all: that is not a drained stream.
    await until('the lag drains', async () => (await scrape(), eventsLag() === 0), 90_000);
    // The writer thread reports a batch just after acknowledging it: give that report a moment.
    await until('the writer reports the second batch', async () => (await scrape(), value('svc_writer_batch_rows_sum') >= 2 * EVENT_COUNT), 10_000);
  });

  it("reads in the Grafana dashboard only metrics the node's registry exposes", async () => {
    await scrape();
    const exposed = exposedNames(body);
    const missing = dashboardExpressions(readDashboard()).flatMap(metricNamesIn).filter((name) => !exposed.has(name));
    expect(missing).toEqual([]);
  });
});
