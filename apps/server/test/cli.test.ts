import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SVC_BIN, startChildServer, until, type ChildServer } from './child-server';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { validEvent } from './events-fixture';
import { startTcpRelay } from './tcp-relay';
import { ADMIN_TOKEN, API_KEY, tempDataDir } from './test-app';
import { hashSessionSecret, openEmbeddedStorage, PgDatabase } from '@svc/storage';
import { fillMetadata, metadataSnapshot, pgMetadata } from '../../../packages/storage/test/metadata-fixture';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../../packages/storage/test/postgres-server';
import { hashToken } from '@svc/tenancy';

const run = promisify(execFile);

async function svc(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SVC_BIN, ...args], { env: { ...process.env, SVC_DATA_DIR: dataDir } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('svc CLI', () => {
  const children: ChildServer[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.process.kill('SIGKILL');
  });

  it('creates tenants with working credentials, lists them, and revokes keys and tokens', async () => {
    const dataDir = tempDataDir();
    const created = await svc(dataDir, 'tenants', 'create', 'acme', '--name', 'Acme Live', '--markets', 'de,fr', '--retention-months', '24');
    expect(created.code).toBe(0);
    const apiKey = /API key:\s+(svc_pk_\w{32})/.exec(created.stdout)?.[1];
    const adminToken = /Admin token:\s+(svc_sk_\w{32})/.exec(created.stdout)?.[1];
    expect(apiKey).toBeDefined();
    expect(adminToken).toBeDefined();

    const list = await svc(dataDir, 'tenants', 'list');
    expect(list.stdout).toContain('acme\tAcme Live\tretention 24 months\tmarkets DE,FR');

    const key = await svc(dataDir, 'keys', 'create', '--tenant', 'acme', '--name', 'tv-app');
    const keyId = key.stdout.split('\t')[0]!;
    expect(keyId).toMatch(/^ak_/);
    const token = await svc(dataDir, 'tokens', 'create', '--tenant', 'acme');
    const tokenId = token.stdout.split('\t')[0]!;
    const newToken = /(svc_sk_\w{32})/.exec(token.stdout)?.[1];
    expect(newToken).toBeDefined();
    expect((await svc(dataDir, 'keys', 'revoke', keyId)).stdout).toContain('revoked');
    expect((await svc(dataDir, 'tokens', 'revoke', tokenId)).stdout).toContain('revoked');
    expect((await svc(dataDir, 'tenants', 'set', 'acme', '--retention-months', '36')).stdout).toContain('retention 36 months');

    // The credentials printed at creation work against a server on that data folder.
    const server = await startChildServer({ SVC_DATA_DIR: dataDir });
    children.push(server);
    expect((await fetch(`${server.url}/v1/sdk/config?apiKey=${apiKey}`)).status).toBe(200);
    expect((await fetch(`${server.url}/v1/settings`, { headers: { authorization: `Bearer ${adminToken}` } })).status).toBe(200);
    expect((await fetch(`${server.url}/v1/settings`, { headers: { authorization: `Bearer ${newToken}` } })).status).toBe(401);
    expect(server.output()).not.toContain('Created tenant "demo"');
  }, 60_000);

  it("ends the dashboard sessions of a token it revokes, and no other token's", async () => {
    const dataDir = tempDataDir();
    const created = await svc(dataDir, 'tenants', 'create', 'acme');
    const adminToken = /Admin token:\s+(svc_sk_\w{32})/.exec(created.stdout)![1]!;
    const token = await svc(dataDir, 'tokens', 'create', '--tenant', 'acme');
    const [tokenId, laptopToken] = [token.stdout.split('\t')[0]!, /(svc_sk_\w{32})/.exec(token.stdout)![1]!];
    const session = (secret: string, tokenHash: string) => ({ idHash: hashSessionSecret(secret), tenantSeq: 1, tokenHash, createdAt: Date.now(), expiresAt: Date.now() + 3_600_000 });
    let storage = await openEmbeddedStorage(dataDir);
    await storage.sessions.createSession(session('laptop', hashToken(laptopToken)));
    await storage.sessions.createSession(session('desk', hashToken(adminToken)));
    await storage.close();
    expect((await svc(dataDir, 'tokens', 'revoke', tokenId)).stdout).toContain('revoked');
    storage = await openEmbeddedStorage(dataDir);
    expect(await storage.sessions.findSession(hashSessionSecret('laptop'))).toBeNull();
    expect(await storage.sessions.findSession(hashSessionSecret('desk'))).not.toBeNull();
    await storage.close();
  }, 60_000);

  it('explains bad input and a data folder held by a running server, with exit code 2', async () => {
    const dataDir = tempDataDir();
    const bad = await svc(dataDir, 'tenants', 'create', 'Not A Slug!');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('tenant id');
    const unknown = await svc(dataDir, 'keys', 'revoke', 'ak_nothing');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('No API key');

    const server = await startChildServer({ SVC_DATA_DIR: dataDir });
    children.push(server);
    const locked = await svc(dataDir, 'tenants', 'list');
    expect(locked.code).toBe(2);
    expect(locked.stderr).toContain('in use by another process');
  }, 60_000);

  it('exports from a running server to a file in CSV and NDJSON, with filters and progress', async () => {
    const dataDir = tempDataDir();
    const server = await startChildServer({ SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN });
    children.push(server);
    const events = [
      ...Array.from({ length: 30 }, (_, i) => validEvent('poll.voted', new Date(Date.now() - 60_000), { userId: `u-${i}`, data: { pollId: 'p', questionText: 'A, "B"\nor C?', optionSelected: 'A', optionIndex: 0 } })),
      validEvent('checkout.completed', new Date(Date.now() - 60_000)),
      validEvent('product.tapped', new Date(Date.now() - 60_000), { userId: '=1+2' }),
    ];
    await fetch(`${server.url}/v1/events`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-api-key': API_KEY }, body: JSON.stringify({ events }) });

    const csvFile = join(dataDir, 'out.csv');
    const csv = await svc(dataDir, 'export', '--url', server.url, '--token', ADMIN_TOKEN, '--format', 'csv', '--out', csvFile);
    expect(csv.code).toBe(0);
    expect(csv.stderr).toContain('100%  32/32 events');
    expect(csv.stderr).toContain('Exported 32 events');
    const records = parse(readFileSync(csvFile, 'utf8'), { columns: true }) as Array<Record<string, string>>;
    expect(records.map((r) => r.eventId).sort()).toEqual(events.map((e) => String(e.eventId)).sort());
    // Values as stored by default; with --csv-safe a formula-like cell cannot run in a spreadsheet.
    const tapped = (rows: Array<Record<string, string>>) => rows.find((r) => r.event === 'product.tapped')!.userId;
    expect(tapped(records)).toBe('=1+2');
    const safeFile = join(dataDir, 'safe.csv');
    expect((await svc(dataDir, 'export', '--url', server.url, '--token', ADMIN_TOKEN, '--format', 'csv', '--csv-safe', '--event', 'product.tapped', '--out', safeFile)).code).toBe(0);
    const safe = parse(readFileSync(safeFile, 'utf8'), { columns: true }) as Array<Record<string, string>>;
    expect(safe).toHaveLength(1);
    expect(tapped(safe)).toBe("'=1+2");

    const ndjson = await svc(dataDir, 'export', '--url', server.url, '--token', ADMIN_TOKEN, '--event', 'checkout.completed');
    expect(ndjson.code).toBe(0);
    const lines = ndjson.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ event: 'checkout.completed', total: 99 });

    const refused = await svc(dataDir, 'export', '--url', server.url, '--token', `svc_sk_${'Q'.repeat(32)}`);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('401');
  }, 60_000);

  it('simulates viewers against the demo broadcast of a running server', async () => {
    const dataDir = tempDataDir();
    const server = await startChildServer({ SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN });
    children.push(server);
    const run = await svc(dataDir, 'simulate', '--url', server.url, '--api-key', API_KEY, '--viewers', '12', '--seconds', '3', '--activity', '1');
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout.trim().split('\n').pop()!);
    expect(result).toMatchObject({ viewers: 12, errors: 0, failedJoins: 0 });
    // The demo's first overlay is a poll: every viewer saw it and voted.
    expect(result.votes).toBe(12);
    const exported = await fetch(`${server.url}/v1/analytics/events?format=ndjson&broadcastId=demo-live`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const events = (await exported.text()).trim().split('\n').map((line) => JSON.parse(line) as { event: string });
    expect(events.filter((e) => e.event === 'broadcast.joined')).toHaveLength(12);
    expect(events.filter((e) => e.event === 'poll.voted')).toHaveLength(12);
    // Nothing was sent twice on a socket that stayed up: the server saw no event again.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/^svc_events_duplicate_total(\{[^}]*\})? 0$/m);
  }, 60_000);

  it('simulates viewers whose sockets are all cut once: they reconnect, resume, send again, and --check finds every acknowledged event stored once', async () => {
    const dataDir = tempDataDir();
    const server = await startChildServer({ SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN });
    children.push(server);
    const relay = await startTcpRelay(server.url);
    try {
      const simulating = svc(dataDir, 'simulate', '--url', relay.url, '--api-key', API_KEY, '--viewers', '10', '--seconds', '6', '--activity', '1', '--check', '--admin-token', ADMIN_TOKEN, '--check-wait', '10');
      // Every viewer connected (two sockets each through the relay), a moment of activity, then
      // answers held back for a while (what the viewers send meanwhile stays unanswered), then the cut.
      await until('every viewer connected through the relay', async () => relay.sockets() >= 20, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      relay.hold(true);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const cut = relay.sockets();
      relay.cut();
      relay.hold(false);
      const done = await simulating;
      expect(cut).toBeGreaterThanOrEqual(20);
      expect(done.code, done.stderr).toBe(0);
      const result = JSON.parse(done.stdout.trim().split('\n').pop()!) as Record<string, unknown> & { check: Record<string, unknown> };
      expect(result).toMatchObject({ viewers: 10, reconnects: 10, resumed: 10, unacknowledged: 0, refused: 0, failedJoins: 0 });
      expect(result.acknowledged).toBe(result.events);
      // What was unanswered at the cut went again on the new sockets, and is stored once (below).
      expect(result.resent).toBeGreaterThan(0);
      expect(result.check).toMatchObject({ checked: result.acknowledged, missing: 0, repeated: 0 });
      expect(done.stderr).toContain(`Stored: all ${result.acknowledged as number} acknowledged events, each once.`);
      // Resumed sessions: one broadcast.joined per viewer, however many sockets it opened.
      const exported = await fetch(`${server.url}/v1/analytics/events?format=ndjson&broadcastId=demo-live&event=broadcast.joined`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const sessions = (await exported.text()).trim().split('\n').map((line) => (JSON.parse(line) as { sessionId: string }).sessionId).filter((id) => id.startsWith('svc_sim'));
      expect(sessions).toHaveLength(10);
    } finally {
      await relay.close();
    }
  }, 60_000);

  it('simulates viewers whose node hangs (their sockets open but silent): they give the sockets up, reconnect and resume, and nothing acknowledged is lost', async () => {
    const dataDir = tempDataDir();
    // A short heartbeat: the viewers notice the silence within about a second.
    const server = await startChildServer({ SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN, SVC_WS_HEARTBEAT_MS: '1000' });
    children.push(server);
    const relay = await startTcpRelay(server.url);
    try {
      const simulating = svc(dataDir, 'simulate', '--url', relay.url, '--api-key', API_KEY, '--viewers', '10', '--seconds', '10', '--activity', '1', '--check', '--admin-token', ADMIN_TOKEN, '--check-wait', '10');
      await until('every viewer connected through the relay', async () => relay.sockets() >= 20, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      relay.freeze();
      const done = await simulating;
      expect(done.code, done.stderr).toBe(0);
      const result = JSON.parse(done.stdout.trim().split('\n').pop()!) as Record<string, unknown> & { check: Record<string, unknown> };
      expect(result).toMatchObject({ viewers: 10, unacknowledged: 0, failedJoins: 0 });
      // Every viewer left its silent socket, and every reconnect resumed its session. On a busy
      // machine a new socket may also miss two 1-second heartbeats and be left in turn.
      expect(result.reconnects).toBeGreaterThanOrEqual(10);
      expect(result.resumed).toBe(result.reconnects);
      expect(result.acknowledged).toBe(result.events);
      expect(result.check).toMatchObject({ checked: result.acknowledged, missing: 0, repeated: 0 });
    } finally {
      await relay.close();
    }
  }, 60_000);

  it('refuses --check without an admin token', async () => {
    const done = await svc(tempDataDir(), 'simulate', '--api-key', API_KEY, '--check');
    expect(done.code).toBe(2);
    expect(done.stderr).toContain('--admin-token');
  });
});

describe.runIf(postgresAvailable())('svc migrate-metadata', () => {
  let postgres: PostgresServer | undefined;
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const child of children.splice(0)) child.process.kill('SIGKILL');
    await postgres?.stop();
  });

  it('copies a data folder into PostgreSQL with counts verified, copies nothing again, reports a conflict with exit code 2, and refuses a folder in use', async () => {
    postgres = await startPostgres();
    const url = await postgres.createDatabase();
    const dataDir = tempDataDir();
    await fillMetadata(dataDir);

    const first = await svc(dataDir, 'migrate-metadata', '--from', dataDir, '--to', url);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^kind\s+source\s+postgres\s+copied\s+unchanged\s+overwritten\s+conflicts$/m);
    expect(first.stdout).toMatch(/^tenants\s+2\s+2\s+2\s+0\s+0\s+0$/m);
    expect(first.stdout).toMatch(/^webhook endpoints\s+2\s+2\s+2\s+0\s+0\s+0$/m);
    expect(first.stdout).toContain('Counts match: the metadata of 2 tenant(s) is in PostgreSQL.');
    const pg = await PgDatabase.open(url, { poolSize: 1 });
    const source = await openEmbeddedStorage(dataDir);
    expect(await metadataSnapshot(pgMetadata(pg))).toEqual(await metadataSnapshot(source));
    await source.close();

    const second = await svc(dataDir, 'migrate-metadata', '--from', dataDir, '--to', url);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/^tenants\s+2\s+2\s+0\s+2\s+0\s+0$/m);
    expect(second.stdout).toMatch(/^dashboard sessions\s+2\s+2\s+0\s+2\s+0\s+0$/m);

    const stores = pgMetadata(pg);
    const acme = (await stores.meta.getTenant('acme'))!;
    await stores.content.updateSponsor(acme.seq, 'sp_1', { name: 'Changed in PostgreSQL' });
    const conflicting = await svc(dataDir, 'migrate-metadata', '--from', dataDir, '--to', url);
    expect(conflicting.code).toBe(2);
    expect(conflicting.stdout).toMatch(/^sponsors\s+2\s+2\s+0\s+1\s+0\s+1$/m);
    expect(conflicting.stderr).toContain('sponsors\tacme/sp_1\tthe destination holds it with other content: name');
    expect((await stores.content.getSponsor(acme.seq, 'sp_1'))!.name).toBe('Changed in PostgreSQL');

    const overwritten = await svc(dataDir, 'migrate-metadata', '--from', dataDir, '--to', url, '--overwrite');
    expect(overwritten.code).toBe(0);
    expect(overwritten.stdout).toMatch(/^sponsors\s+2\s+2\s+0\s+1\s+1\s+0$/m);
    expect((await stores.content.getSponsor(acme.seq, 'sp_1'))!.name).toBe('Brew');
    await pg.close();

    expect((await svc(dataDir, 'migrate-metadata', '--from', join(dataDir, 'nothing-here'), '--to', url)).stderr).toContain('No embedded database');
    const server = await startChildServer({ SVC_DATA_DIR: dataDir });
    children.push(server);
    const locked = await svc(dataDir, 'migrate-metadata', '--from', dataDir, '--to', url);
    expect(locked.code).toBe(2);
    expect(locked.stderr).toContain('in use by another process');
  }, 120_000);
});
