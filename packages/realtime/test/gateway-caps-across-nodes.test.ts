import type { IncomingMessage } from 'node:http';
import { LocalBus } from '@svc/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { VIEWER_COUNT_INTERVAL_MS, type GatewayOptions } from '../src';
import { startGateway, TENANT, type Attempt, type Harness, type Viewer } from './gateway-harness';

/** How a socket that opened ended up: welcomed, or closed with its code and reason. */
function outcome(viewer: Viewer): Promise<string> {
  return Promise.race([viewer.next((m) => m.type === 'welcome').then(() => 'welcome'), viewer.closed.then((c) => `${c.code} ${c.reason}`)]);
}

/** Opens sockets one after another on a node (from `localAddress`, default 127.0.0.1) and tells how each ended. */
async function attempts(h: Harness, count: number, prefix: string, localAddress?: string): Promise<string[]> {
  const outcomes: string[] = [];
  for (let i = 0; i < count; i++) {
    const attempt: Attempt = await h.attempt({ sessionId: `svc_${prefix}${i}`, localAddress });
    outcomes.push(attempt.kind === 'opened' ? await outcome(attempt.viewer) : `${attempt.status} ${(JSON.parse(attempt.body) as { code: string }).code}`);
  }
  return outcomes;
}

/** The viewers' country, as a proxy header would tell it: from the session id here (`svc_fr…` in France). */
const countryOf = (request: IncomingMessage) => (new URL(request.url ?? '/', 'http://localhost').searchParams.get('sessionId')?.startsWith('svc_fr') ? 'FR' : 'DE');

/** Two nodes' gateways on one bus (a LocalBus: each hears the other's counts, as on NATS). */
describe('connection caps across nodes', () => {
  let nodes: Harness[] = [];
  afterEach(async () => {
    await Promise.all(nodes.map((h) => h.close()));
    nodes = [];
  });

  const twoNodes = async (options: Partial<GatewayOptions>) => {
    const bus = new LocalBus();
    nodes = [
      await startGateway(options, [], [], bus, { viewerCountsAcrossNodes: true, country: countryOf }),
      await startGateway(options, [], [], bus, { viewerCountsAcrossNodes: true, country: countryOf }),
    ];
    return nodes as [Harness, Harness];
  };

  it("counts the other node's sockets in the tenant's cap: 6 of 10 on A, B admits 4, then refuses with 1013 too_many_connections", async () => {
    // B's viewers come from another address than A's: only the tenant's cap is at stake.
    const [a, b] = await twoNodes({ maxConnectionsPerTenant: 10, addressSharePercent: 100 });
    const onA = await Promise.all(Array.from({ length: 6 }, (_, i) => a.join(`svc_a${i}`)));
    a.timers.advance(VIEWER_COUNT_INTERVAL_MS);
    expect(await attempts(b, 5, 'b', '127.0.0.2')).toEqual([...Array<string>(4).fill('welcome'), '1013 too_many_connections']);

    // Sockets closed on A free their places on B once A's next count arrives.
    for (const viewer of onA.slice(0, 2)) viewer.ws.close();
    await Promise.all(onA.slice(0, 2).map((viewer) => viewer.closed));
    await expect.poll(() => a.gateway.viewerCount(TENANT.seq, 'b')).toBe(4);
    expect(await attempts(b, 1, 'early', '127.0.0.3')).toEqual(['1013 too_many_connections']);
    a.timers.advance(VIEWER_COUNT_INTERVAL_MS);
    expect(await attempts(b, 3, 'later', '127.0.0.3')).toEqual(['welcome', 'welcome', '1013 too_many_connections']);
  });

  it('frees at once the places of a node that closes cleanly', async () => {
    const [a, b] = await twoNodes({ maxConnectionsPerTenant: 10, addressSharePercent: 100 });
    await Promise.all(Array.from({ length: 10 }, (_, i) => a.join(`svc_a${i}`)));
    a.timers.advance(VIEWER_COUNT_INTERVAL_MS);
    expect(await attempts(b, 1, 'full', '127.0.0.2')).toEqual(['1013 too_many_connections']);
    await a.close();
    nodes = [b];
    expect(await attempts(b, 2, 'b', '127.0.0.2')).toEqual(['welcome', 'welcome']);
  });

  it("counts the other node's sockets of an address in its cap: 6 of 10 on A, B admits 4, then refuses with 429 before the handshake", async () => {
    const [a, b] = await twoNodes({ maxConnectionsPerAddress: 10 });
    await Promise.all(Array.from({ length: 6 }, (_, i) => a.join(`svc_a${i}`)));
    a.timers.advance(VIEWER_COUNT_INTERVAL_MS);
    expect(await attempts(b, 5, 'b')).toEqual([...Array<string>(4).fill('welcome'), '429 rate_limited']);
    expect(b.gateway.openConnectionsOf('127.0.0.1')).toBe(4);
  });

  it("counts the other node's sockets of an address in its share of the tenant's cap: 6 of 10 on A, B admits 4, then refuses with 1013 too_many_connections_from_address", async () => {
    // Ten percent of 100.
    const [a, b] = await twoNodes({ maxConnectionsPerTenant: 100 });
    await Promise.all(Array.from({ length: 6 }, (_, i) => a.join(`svc_a${i}`)));
    a.timers.advance(VIEWER_COUNT_INTERVAL_MS);
    expect(await attempts(b, 5, 'b')).toEqual([...Array<string>(4).fill('welcome'), '1013 too_many_connections_from_address']);
  });

  it("counts the other node's live viewers by country", async () => {
    const [a, b] = await twoNodes({});
    await Promise.all(['svc_fr1', 'svc_fr2', 'svc_de1'].map((sessionId) => a.join(sessionId)));
    await a.join('svc_fr3', 'b2');
    await b.join('svc_fr4');
    a.timers.advance(VIEWER_COUNT_INTERVAL_MS);
    expect(await b.liveViewers.liveViewers(TENANT.seq, {})).toBe(5);
    expect(await b.liveViewers.liveViewers(TENANT.seq, { country: 'FR' })).toBe(4);
    expect(await b.liveViewers.liveViewers(TENANT.seq, { country: 'FR', broadcastId: 'b' })).toBe(3);
    expect(await b.liveViewers.liveViewers(TENANT.seq, { country: 'DE' })).toBe(1);
    expect(await b.liveViewers.liveViewers(TENANT.seq, { country: 'IT' })).toBe(0);
  });
});
