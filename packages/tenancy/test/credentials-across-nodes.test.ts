import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { PgChangeFeed, PgDatabase, PgMetaStore, type ApiKeyRecord, type MetadataChangeListener } from '@svc/storage';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../storage/test/postgres-server';
import { CREDENTIAL_CACHE_TTL_MS, TenantService } from '../src/tenant-service';

const available = postgresAvailable();

/** The documented bound with a working feed is the NOTIFY delivery time; a second is generous. */
const ACROSS_NODES_BOUND_MS = 1_000;

async function within(ms: number, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.runIf(available)('credentials on two nodes sharing PostgreSQL and its change feed', () => {
  let server: PostgresServer;
  const closing: Array<() => Promise<void>> = [];
  // Never advanced unless a test says so: the cache's time bound plays no part.
  const clock = new ManualClock(1_767_000_000_000);

  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  /** A node: its pool, store, change feed and tenant service, as the server builds them. */
  const node = async (url: string, listenCheckIntervalMs?: number) => {
    const db = await PgDatabase.open(url, { poolSize: 2 });
    const feed = await PgChangeFeed.start(db, { listenCheckIntervalMs });
    closing.push(async () => {
      await feed.close();
      await db.close();
    });
    const meta = new PgMetaStore(db);
    const tenants = new TenantService(meta, clock);
    tenants.followChanges(feed);
    return { tenants, meta, feed };
  };

  const twoNodes = async (listenCheckIntervalMs?: number) => {
    const url = await server.createDatabase();
    const a = await node(url, listenCheckIntervalMs);
    const b = await node(url, listenCheckIntervalMs);
    const created = await a.tenants.createTenant({ id: 'acme' });
    // Node B has served the key and the token: both sit in its cache.
    expect((await b.tenants.authenticateApiKey(created.apiKey.key))?.id).toBe('acme');
    expect((await b.tenants.authenticateAdminToken(created.adminToken))?.id).toBe('acme');
    return { a, b, created };
  };

  it('refuses on node B, within a second, an API key revoked on node A, and tells B’s revocation listeners', async () => {
    const { a, b, created } = await twoNodes();
    const revokedOnB: ApiKeyRecord[] = [];
    b.tenants.onApiKeyRevoked((record) => revokedOnB.push(record));
    await a.tenants.revokeApiKey(null, created.apiKey.id);
    await within(ACROSS_NODES_BOUND_MS, async () => (await b.tenants.authenticateApiKey(created.apiKey.key)) === null);
    await within(ACROSS_NODES_BOUND_MS, async () => revokedOnB.length === 1);
    expect(revokedOnB[0]).toMatchObject({ id: created.apiKey.id, key: created.apiKey.key });
    expect(revokedOnB[0]!.revokedAt).not.toBeNull();
  });

  it('refuses on node B, within a second, an admin token revoked on node A', async () => {
    const { a, b, created } = await twoNodes();
    const [token] = await a.tenants.listAdminTokens(created.tenant.seq);
    await a.tenants.revokeAdminToken(created.tenant.seq, token!.id);
    await within(ACROSS_NODES_BOUND_MS, async () => (await b.tenants.authenticateAdminToken(created.adminToken)) === null);
  });

  it('serves on node B, within a second, the settings changed on node A (the SDK config is built from them)', async () => {
    const { a, b, created } = await twoNodes();
    await a.tenants.updateSettings(created.tenant, { theme: { primaryColor: '#123456' } });
    await within(ACROSS_NODES_BOUND_MS, async () => (await b.tenants.authenticateApiKey(created.apiKey.key))?.settings.theme.primaryColor === '#123456');
  });

  it('keeps serving from its cache a key revoked without a notice until the time bound, then refuses it', async () => {
    const { a, b, created } = await twoNodes();
    // As an operator tool that writes the store but publishes nothing would.
    await a.meta.revokeApiKey(null, created.apiKey.id, clock.now());
    expect((await b.tenants.authenticateApiKey(created.apiKey.key))?.id).toBe('acme');
    clock.advance(CREDENTIAL_CACHE_TTL_MS);
    expect(await b.tenants.authenticateApiKey(created.apiKey.key)).toBeNull();
  });

  it('drops its whole cache when its feed was cut off from the server and is back', async () => {
    const { a, b, created } = await twoNodes(100);
    let missed = 0;
    const watcher: MetadataChangeListener = { changed: () => {}, missedChanges: () => void missed++ };
    b.feed.subscribe(watcher);
    // Revoked without a notice: only a cache drop makes node B see it before the time bound.
    await a.meta.revokeApiKey(null, created.apiKey.id, clock.now());
    expect((await b.tenants.authenticateApiKey(created.apiKey.key))?.id).toBe('acme');
    await server.kill();
    await server.restart();
    await within(10_000, async () => missed > 0);
    expect(await b.tenants.authenticateApiKey(created.apiKey.key)).toBeNull();
  });
});
