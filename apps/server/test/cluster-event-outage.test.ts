import { describe, expect, it } from 'vitest';
import { CLUSTER_ADMIN_TOKEN, CLUSTER_API_KEY, clusterEnginesAvailable, clusterOfOneNode } from './cluster-engines';
import { until as untilTrue } from './child-server';
import { validEvent } from './events-fixture';

const available = clusterEnginesAvailable();

/** How long the node may take to notice an outage, and to recover once the engine is back. */
const NOTICE_WITHIN_MS = 20_000;

/** Resolves once `check` answers true, within the time the node is given to notice or recover. */
const until = (what: string, check: () => Promise<boolean>, withinMs = NOTICE_WITHIN_MS) => untilTrue(what, check, withinMs);

describe.runIf(available)('a node of full cluster mode while NATS or ClickHouse goes away and comes back', () => {
  const cluster = clusterOfOneNode();

  const ingest = (events: unknown[]) =>
    fetch(`${cluster.node.url}/v1/events`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-api-key': CLUSTER_API_KEY }, body: JSON.stringify({ events }) });
  const exportedIds = async (): Promise<string[]> => {
    const response = await fetch(`${cluster.node.url}/v1/analytics/events?format=ndjson`, { headers: { authorization: `Bearer ${CLUSTER_ADMIN_TOKEN}` } });
    expect(response.status).toBe(200);
    return (await response.text()).split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { eventId: string }).eventId);
  };
  const ready = async () => (await fetch(`${cluster.node.url}/readyz`)).status;

  it('refuses ingest with 503 storage_unavailable and Retry-After while NATS is down, acknowledging nothing it did not store', async () => {
    const before = validEvent('product.tapped', new Date());
    expect((await ingest([before])).status).toBe(200);
    await until('the first event readable', async () => (await exportedIds()).includes(before.eventId as string));

    await cluster.engines.nats.kill();
    await until('readiness failing', async () => (await ready()) === 503);
    const refused = validEvent('product.tapped', new Date());
    const answer = await ingest([refused]);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await answer.json()) as { code: string }).code).toBe('storage_unavailable');

    await cluster.engines.nats.restart();
    await until('readiness back', async () => (await ready()) === 200);
    // The client retries what was refused: stored once, like the first.
    await until('ingest back', async () => (await ingest([refused])).status === 200);
    await until('the retried event readable', async () => (await exportedIds()).includes(refused.eventId as string));
    const ids = await exportedIds();
    expect(ids.filter((id) => id === refused.eventId)).toHaveLength(1);
    expect(ids.filter((id) => id === before.eventId)).toHaveLength(1);
  }, 120_000);

  it('stays ready and acknowledges ingest while ClickHouse is down, storing every event once it is back; reads answer 503 meanwhile', async () => {
    await cluster.engines.clickhouse.kill();
    const read = async () => fetch(`${cluster.node.url}/v1/analytics/events?format=ndjson`, { headers: { authorization: `Bearer ${CLUSTER_ADMIN_TOKEN}` } });
    await until('reads failing', async () => (await read()).status === 503);
    // The event log absorbs the outage: the node stays in the load balancer.
    expect(await ready()).toBe(200);
    const during = Array.from({ length: 50 }, () => validEvent('product.tapped', new Date()));
    // The event log holds them: acknowledged without ClickHouse.
    expect((await ingest(during)).status).toBe(200);
    const refused = await read();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await refused.json()) as { code: string }).code).toBe('storage_unavailable');

    await cluster.engines.clickhouse.restart();
    await until('the events written by the writer', async () => {
      const ids = new Set(await exportedIds());
      return during.every((event) => ids.has(event.eventId as string));
    }, 60_000);
    const ids = await exportedIds();
    expect(ids.length).toBe(new Set(ids).size);
  }, 150_000);
});
