import { createServer, type Server } from 'node:net';
import { freePort, NO_NODE_PROBLEM, startHaproxy, type LoadBalancer } from '@svc/engines';
import { problemFor, SvcError } from '@svc/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { haproxyAvailable } from './cluster-engines';

/**
 * What `npm run cluster`'s HAProxy answers by itself when no node can: the service's own 503
 * problem with `Retry-After`, never HAProxy's HTML page without it, so that clients (the SDK,
 * `svc simulate`, server-to-server ingest) retry as after a node's own 503.
 */
describe.runIf(haproxyAvailable())('the load balancer when no node can answer', () => {
  let balancer: LoadBalancer | undefined;
  let backend: Server | undefined;
  afterEach(async () => {
    await balancer?.stop();
    balancer = undefined;
    backend?.close();
    backend = undefined;
  });

  const expectNoNodeProblem = async (response: Response) => {
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('retry-after')).toBe('5');
    expect(await response.json()).toEqual(NO_NODE_PROBLEM);
  };

  it("is the error catalogue's not_ready problem", () => {
    expect(NO_NODE_PROBLEM).toEqual(problemFor(new SvcError('not_ready', NO_NODE_PROBLEM.detail)));
  });

  it('answers 503 not_ready with Retry-After while no node is up', async () => {
    balancer = await startHaproxy(await freePort(), [{ name: 'node-1', address: `127.0.0.1:${await freePort()}` }]);
    await expectNoNodeProblem(await fetch(`${balancer.url}/v1/events`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }));
    await expectNoNodeProblem(await fetch(`${balancer.url}/readyz`));
  }, 30_000);

  it('answers 503 not_ready with Retry-After when the node dies in the middle of a request (HAProxy would say 502)', async () => {
    // A node that takes the request and is gone before it answers.
    backend = createServer((socket) => socket.once('data', () => socket.destroy()));
    const port = await freePort();
    await new Promise<void>((resolve) => backend!.listen(port, '127.0.0.1', resolve));
    balancer = await startHaproxy(await freePort(), [{ name: 'node-1', address: `127.0.0.1:${port}` }]);
    // Before the health checks take the node out (they fail from the start: 3 in a row, 1 s apart).
    await expectNoNodeProblem(await fetch(`${balancer.url}/v1/broadcasts`));
  }, 30_000);
});
