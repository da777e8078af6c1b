import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../../packages/storage/test/postgres-server';
import { startChildServer, type ChildServer, until as untilTrue } from './child-server';
import { validEvent } from './events-fixture';

const available = postgresAvailable();

const API_KEY = `svc_pk_${'OutageDemo'.padEnd(32, '0')}`;
const ADMIN_TOKEN = `svc_sk_${'OutageDemo'.padEnd(32, '0')}`;
/** How long the node may take to notice the outage, and to recover once PostgreSQL is back. */
const NOTICE_WITHIN_MS = 15_000;

/** Resolves once `check` answers true, within the time the node is given to notice or recover. */
const until = (what: string, check: () => Promise<boolean>, withinMs = NOTICE_WITHIN_MS) => untilTrue(what, check, withinMs);

describe.runIf(available)('a node on PostgreSQL while PostgreSQL goes away and comes back', () => {
  let server: PostgresServer;
  let node: ChildServer;
  let dataDir: string;
  beforeAll(async () => {
    server = await startPostgres();
    dataDir = mkdtempSync(join(tmpdir(), 'svc-node-'));
    node = await startChildServer({
      SVC_DATA_DIR: dataDir,
      SVC_POSTGRES_URL: await server.createDatabase(),
      SVC_BOOTSTRAP_API_KEY: API_KEY,
      SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    });
  }, 60_000);
  afterAll(async () => {
    if (node) {
      node.process.kill('SIGTERM');
      await node.exited;
    }
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` }) =>
    fetch(`${node.url}${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('answers 503 storage_unavailable with Retry-After (never 500) while it is down, and recovers by itself', async () => {
    expect((await call('POST', '/v1/broadcasts', { id: 'match-1', campaignId: 1 })).status).toBe(201);
    const login = await call('POST', '/v1/session', { token: ADMIN_TOKEN }, {});
    const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;

    // Traffic of every kind, all along: SDK, ingest, admin, dashboard, readiness.
    const answers: Array<{ path: string; status: number }> = [];
    let traffic = true;
    const requests: Array<[string, string, unknown?, Record<string, string>?]> = [
      ['GET', `/v1/sdk/config?apiKey=${API_KEY}`, undefined, {}],
      ['POST', '/v1/events', validEvent('broadcast.joined', new Date()), { 'x-svc-api-key': API_KEY }],
      ['GET', '/v1/broadcasts'],
      ['GET', '/v1/broadcasts/match-1/overlays'],
      ['POST', '/v1/api-keys', { name: 'during traffic' }],
      ['GET', '/v1/settings'],
      ['GET', '/v1/webhooks'],
      ['GET', '/v1/session', undefined, { cookie }],
      ['GET', '/readyz', undefined, {}],
    ];
    const loop = (async () => {
      while (traffic) {
        for (const [method, path, body, headers] of requests) {
          const response = await call(method, path, body, headers);
          answers.push({ path, status: response.status });
          await response.arrayBuffer();
        }
      }
    })();

    await new Promise((resolve) => setTimeout(resolve, 300));
    await server.kill();
    await until('/readyz answers 503', async () => (await fetch(`${node.url}/readyz`)).status === 503);
    const ready = await fetch(`${node.url}/readyz`);
    expect(ready.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect((await ready.json()).code).toBe('storage_unavailable');
    expect(ready.headers.get('retry-after')).toMatch(/^\d+$/);
    for (const [method, path, body] of [['GET', '/v1/broadcasts'], ['POST', '/v1/api-keys', { name: 'refused' }], ['GET', '/v1/broadcasts/match-1/overlays']] as const) {
      const response = await call(method, path, body);
      expect(response.status, `${method} ${path}`).toBe(503);
      expect(response.headers.get('retry-after'), `${method} ${path}`).toMatch(/^\d+$/);
      expect((await response.json()).code, `${method} ${path}`).toBe('storage_unavailable');
    }
    const sessionDuringOutage = await call('GET', '/v1/session', undefined, { cookie });
    expect(sessionDuringOutage.status).toBe(503);
    // Background work (deletion jobs, webhook dispatch) meets the outage too: let it.
    await new Promise((resolve) => setTimeout(resolve, 2_000));

    await server.restart();
    await until('/readyz answers 200 again', async () => (await fetch(`${node.url}/readyz`)).status === 200);
    const created = await call('POST', '/v1/api-keys', { name: 'after the outage' });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    expect((await fetch(`${node.url}/v1/sdk/config?apiKey=${key}`)).status).toBe(200);
    expect((await call('POST', '/v1/broadcasts/match-1/overlays', { type: 'lineup', items: [{ title: 'Kick-off', at: new Date().toISOString() }] })).status).toBe(201);
    expect((await call('GET', '/v1/session', undefined, { cookie })).status).toBe(200);

    traffic = false;
    await loop;
    expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(0);
    expect(answers.filter((a) => a.status >= 500 && a.status !== 503)).toEqual([]);
    expect(node.process.exitCode).toBeNull();
    expect(node.output()).not.toMatch(/unhandled|uncaught/i);
  }, 90_000);
});
