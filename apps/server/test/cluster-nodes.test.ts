import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDatabase, PgMetaStore } from '@svc/storage';
import { CREDENTIAL_CACHE_TTL_MS, TenantService } from '@svc/tenancy';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../../packages/storage/test/postgres-server';
import { runSvc, startChildServer, type ChildServer } from './child-server';

const available = postgresAvailable();

const API_KEY = `svc_pk_${'ClusterDemo'.padEnd(32, '0')}`;
const ADMIN_TOKEN = `svc_sk_${'ClusterDemo'.padEnd(32, '0')}`;
/** How often the revocation test asks node A again. */
const POLL_INTERVAL_MS = 250;
/** Slack on the credential cache's bound: the request itself and a loaded machine. */
const REVOCATION_SLACK_MS = 5_000;

describe.runIf(available)('several nodes on one PostgreSQL', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('creates tenant demo once when nodes bootstrap an empty database at the same moment', async () => {
    for (let round = 0; round < 5; round++) {
      const url = await server.createDatabase();
      const pools = await Promise.all([1, 2, 3].map(() => PgDatabase.open(url, { poolSize: 2 })));
      try {
        const nodes = pools.map((pool) => new TenantService(new PgMetaStore(pool)));
        const created = await Promise.all(nodes.map((node) => node.bootstrap({ apiKey: API_KEY, adminToken: ADMIN_TOKEN })));
        expect(created.filter((c) => c !== null)).toHaveLength(1);
        expect((await nodes[0]!.listTenants()).map((t) => t.id)).toEqual(['demo']);
        expect(await nodes[1]!.authenticateApiKey(API_KEY)).toMatchObject({ id: 'demo' });
      } finally {
        await Promise.all(pools.map((pool) => pool.close()));
      }
    }
  });

  describe('two Svc processes, each with its own data folder', () => {
    let url: string;
    let a: ChildServer;
    let b: ChildServer;
    const dirs: string[] = [];
    const node = (postgresUrl: string) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-node-'));
      dirs.push(dataDir);
      return startChildServer({
        SVC_DATA_DIR: dataDir,
        SVC_POSTGRES_URL: postgresUrl,
        SVC_POSTGRES_POOL_SIZE: '3',
        SVC_BOOTSTRAP_API_KEY: API_KEY,
        SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
      });
    };

    beforeAll(async () => {
      url = await server.createDatabase();
      [a, b] = await Promise.all([node(url), node(url)]);
    }, 60_000);
    afterAll(async () => {
      for (const child of [a, b]) {
        if (!child) continue;
        child.process.kill('SIGTERM');
        await child.exited;
      }
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    const call = (target: ChildServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`${target.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    it('started together on an empty database, they create tenant demo once', async () => {
      const announced = [a, b].filter((child) => child.output().includes('Created tenant "demo".'));
      expect(announced).toHaveLength(1);
      const sql = postgres(url, { max: 1 });
      try {
        expect(await sql`SELECT id FROM tenants`).toEqual([{ id: 'demo' }]);
        expect((await sql`SELECT count(*)::int AS n FROM api_keys`)[0]!.n).toBe(1);
      } finally {
        await sql.end();
      }
      for (const target of [a, b]) expect((await fetch(`${target.url}/readyz`)).status).toBe(200);
    });

    it('accepts on node B an API key created on node A, lists there an overlay created on A, and knows a login made on A', async () => {
      const created = await call(a, 'POST', '/v1/api-keys', { name: 'made on A' });
      expect(created.status).toBe(201);
      const { key } = (await created.json()) as { key: string };
      expect((await fetch(`${b.url}/v1/sdk/config?apiKey=${key}`)).status).toBe(200);

      const campaigns = (await (await call(a, 'GET', '/v1/campaigns')).json()) as { data: Array<{ id: number }> };
      expect((await call(a, 'POST', '/v1/broadcasts', { id: 'match-1', campaignId: campaigns.data[0]!.id, title: 'Match 1' })).status).toBe(201);
      const overlay = await call(a, 'POST', '/v1/broadcasts/match-1/overlays', { type: 'lineup', items: [{ title: 'Kick-off', at: new Date().toISOString() }] });
      expect(overlay.status).toBe(201);
      const { id } = (await overlay.json()) as { id: string };
      const listed = (await (await call(b, 'GET', '/v1/broadcasts/match-1/overlays')).json()) as { data: Array<{ id: string }> };
      expect(listed.data.map((o) => o.id)).toContain(id);

      const login = await fetch(`${a.url}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: ADMIN_TOKEN }) });
      expect(login.status).toBe(200);
      const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;
      const onB = await fetch(`${b.url}/v1/session`, { headers: { cookie } });
      expect(onB.status).toBe(200);
      expect(await onB.json()).toEqual({ tenant: 'demo', name: 'Demo' });
    });

    it('creates each of 10 campaigns asked without an id at the same moment on both nodes, each with an id of its own', async () => {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => call(i % 2 ? b : a, 'POST', '/v1/campaigns', { name: `Rush ${i}` })));
      expect(answers.map((r) => r.status)).toEqual(Array(10).fill(201));
      const ids = await Promise.all(answers.map(async (r) => ((await r.json()) as { id: number }).id));
      expect(new Set(ids).size).toBe(10);
      const listed = (await (await call(b, 'GET', '/v1/campaigns')).json()) as { data: Array<{ id: number; name: string }> };
      for (const [i, id] of ids.entries()) expect(listed.data.find((c) => c.id === id)?.name).toBe(`Rush ${i}`);
    });

    it('runs the operator commands against PostgreSQL while the nodes run: a key made by the CLI works on both nodes', async () => {
      const cli = (...args: string[]) => runSvc(args, { SVC_DATA_DIR: dirs[0]!, SVC_POSTGRES_URL: url });
      const listed = await cli('tenants', 'list');
      // No "in use by another process": the CLI opens no node's data folder.
      expect(listed.exit, listed.output).toBe(0);
      expect(listed.output).toMatch(/^demo\t/m);
      const created = await cli('keys', 'create', '--tenant', 'demo', '--name', 'from the CLI');
      expect(created.exit, created.output).toBe(0);
      const key = /svc_pk_\w{32}/.exec(created.output)?.[0];
      expect(key).toBeDefined();
      for (const target of [a, b]) expect((await fetch(`${target.url}/v1/sdk/config?apiKey=${key}`)).status).toBe(200);
      const keys = await cli('keys', 'list', '--tenant', 'demo');
      expect(keys.output).toContain('from the CLI');
      // Revoked by the CLI: both nodes hear it at once (the change feed), not when their cache expires.
      const keyId = new RegExp(`^(\\S+)\\t${key}`, 'm').exec(keys.output)?.[1];
      expect(keyId).toBeDefined();
      const revoked = await cli('keys', 'revoke', keyId!);
      expect(revoked.exit, revoked.output).toBe(0);
      const revokedAt = Date.now();
      for (const target of [a, b]) {
        await expect.poll(async () => (await fetch(`${target.url}/v1/sdk/config?apiKey=${key}`)).status, { timeout: 5_000, interval: 100 }).toBe(401);
      }
      expect(Date.now() - revokedAt).toBeLessThan(5_000);
    });

    it(`refuses on node A a key revoked on node B within the credential cache's bound (${CREDENTIAL_CACHE_TTL_MS} ms)`, async () => {
      const created = (await (await call(a, 'POST', '/v1/api-keys', { name: 'to revoke' })).json()) as { id: string; key: string };
      // Both nodes have the key in their credential cache.
      for (const target of [a, b]) expect((await fetch(`${target.url}/v1/sdk/config?apiKey=${created.key}`)).status).toBe(200);
      expect((await call(b, 'DELETE', `/v1/api-keys/${created.id}`)).status).toBe(200);
      const revokedAt = Date.now();
      expect((await fetch(`${b.url}/v1/sdk/config?apiKey=${created.key}`)).status).toBe(401);
      let status = 200;
      while (status === 200 && Date.now() - revokedAt < CREDENTIAL_CACHE_TTL_MS + REVOCATION_SLACK_MS) {
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
        status = (await fetch(`${a.url}/v1/sdk/config?apiKey=${created.key}`)).status;
      }
      expect(status).toBe(401);
    }, CREDENTIAL_CACHE_TTL_MS + 30_000);
  });
});
