import { describe, expect, it } from 'vitest';
import { uuidv7 } from 'uuidv7';
import { CLUSTER_ADMIN_TOKEN, CLUSTER_API_KEY, clusterEnginesAvailable, clusterOfOneNode } from './cluster-engines';
import { until } from './child-server';

const available = clusterEnginesAvailable();

/** How long the writer may take to store what was acknowledged. */
const STORED_WITHIN_MS = 30_000;

/**
 * A poll.voted as an attacker writes it with the public key: lone surrogate escapes in strings
 * and a key, NUL, and numbers at the edges of a double. ClickHouse 18.16 refuses a whole insert
 * over one lone surrogate: stored as given, it would stop the writer for every tenant.
 */
function hostileText(eventId: string): string {
  return `{"events":[{"event":"poll.voted","eventId":"${eventId}","userId":"u\\ud800","sessionId":"svc_hostile1","broadcastId":"room\\udc00",`
    + `"timestamp":"${new Date().toISOString()}","data":{"pollId":"p1","questionText":"\\ud800\\u0000","optionSelected":"A\\udc00",`
    + `"optionIndex":0,"tiny":1e-310,"huge":1.7976931348623157e308,"extra":{"deep":[{"k\\udbff":"\\udfff"}]}}}]}`;
}

describe.runIf(available)('hostile text through the event log into ClickHouse', () => {
  const cluster = clusterOfOneNode();

  const exported = async (): Promise<Array<{ eventId: string; userId: string; broadcastId: string; data: Record<string, unknown> }>> => {
    const response = await fetch(`${cluster.node.url}/v1/analytics/events?format=ndjson`, { headers: { authorization: `Bearer ${CLUSTER_ADMIN_TOKEN}` } });
    expect(response.status).toBe(200);
    return (await response.text()).split('\n').filter(Boolean).map((line) => JSON.parse(line));
  };

  it('stores a hostile event once, well-formed, and the writer goes on with the next ones', async () => {
    const hostileId = uuidv7();
    const answer = await fetch(`${cluster.node.url}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-api-key': CLUSTER_API_KEY },
      body: hostileText(hostileId),
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    const next = uuidv7();
    const after = await fetch(`${cluster.node.url}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-api-key': CLUSTER_API_KEY },
      body: JSON.stringify({ events: [{ event: 'broadcast.joined', eventId: next, sessionId: 'svc_after1', broadcastId: 'room', timestamp: new Date().toISOString(), data: {} }] }),
    });
    expect(after.status).toBe(200);
    await until('both events stored', async () => {
      const ids = (await exported()).map((e) => e.eventId);
      return ids.includes(hostileId) && ids.includes(next);
    }, STORED_WITHIN_MS);
    const events = await exported();
    const hostile = events.filter((e) => e.eventId === hostileId);
    expect(hostile).toHaveLength(1);
    // Lone surrogates became U+FFFD; NUL and the numbers are kept as sent.
    expect(hostile[0]!.userId).toBe('u\ufffd');
    expect(hostile[0]!.broadcastId).toBe('room\ufffd');
    expect(hostile[0]!.data).toMatchObject({ questionText: '\ufffd\u0000', optionSelected: 'A\ufffd', tiny: 1e-310, huge: 1.7976931348623157e308 });
  }, 90_000);
});
