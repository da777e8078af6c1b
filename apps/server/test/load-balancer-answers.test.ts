import { request } from 'node:http';
import { createServer, type Server } from 'node:net';
import { backendStates, freePort, NO_NODE_PROBLEM, startHaproxy, type LoadBalancer } from '@svc/engines';
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

  const expectNoNodeProblem = async (response: { status: number; headers: Record<string, string | string[] | undefined>; body: string }) => {
    expect(response.status).toBe(503);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.headers['retry-after']).toBe('5');
    expect(JSON.parse(response.body)).toEqual(NO_NODE_PROBLEM);
  };
  /** One request on a connection of its own (HAProxy closes a connection after its own answers). */
  const send = (url: string, method = 'GET', body?: string) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
      const req = request(url, { method, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });

  it("is the error catalogue's not_ready problem", () => {
    expect(NO_NODE_PROBLEM).toEqual(problemFor(new SvcError('not_ready', NO_NODE_PROBLEM.detail)));
  });

  it('answers 503 not_ready with Retry-After while no node is up', async () => {
    balancer = await startHaproxy(await freePort(), [{ name: 'node-1', address: `127.0.0.1:${await freePort()}` }]);
    await expectNoNodeProblem(await send(`${balancer.url}/v1/events`, 'POST', '{}'));
    await expectNoNodeProblem(await send(`${balancer.url}/readyz`));
  }, 30_000);

  it('answers 503 not_ready with Retry-After when the node dies in the middle of a request (HAProxy would say 502)', async () => {
    // A node that passes its health checks but is gone before it answers any other request.
    backend = createServer((socket) =>
      socket.on('error', () => {}).once('data', (chunk: Buffer) => {
        if (chunk.toString('latin1').startsWith('GET /readyz ')) socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        else socket.destroy();
      }),
    );
    const port = await freePort();
    await new Promise<void>((resolve) => backend!.listen(port, '127.0.0.1', resolve));
    balancer = await startHaproxy(await freePort(), [{ name: 'node-1', address: `127.0.0.1:${port}` }]);
    // The node stays in (its checks pass), so each answer below is HAProxy's for a request cut short.
    for (let i = 0; i < 3; i++) await expectNoNodeProblem(await send(`${balancer.url}/v1/broadcasts`));
    expect((await backendStates(balancer.socketPath))['node-1']).toMatch(/^UP/);
  }, 30_000);
});
