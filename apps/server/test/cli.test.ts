import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { SVC_BIN, startChildServer, type ChildServer } from './child-server';
import { tempDataDir } from './test-app';

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
});
