import { describe, expect, it } from 'vitest';
import { LocalBus, ManualClock, type BusTopics } from '@svc/protocol';
import { PgMetaStore, type MetadataChangeListener } from '@svc/storage';
import { postgresAvailable } from '../../storage/test/postgres-server';
import { ACROSS_NODES_BOUND_MS, postgresNodes, TEST_SETTINGS, within } from '../../storage/test/postgres-nodes';
import { CREDENTIAL_CACHE_TTL_MS, TenantService } from '../src/tenant-service';

const available = postgresAvailable();

/** The documented bound with a working feed is the NOTIFY delivery time; a second is generous. */


describe.runIf(available)('credentials on two nodes sharing PostgreSQL and its change feed', () => {
  const nodes = postgresNodes();
  // Never advanced unless a test says so: the cache's time bound plays no part.
  const clock = new ManualClock(1_767_000_000_000);


  /** A node: its pool, store, change feed and tenant service, as the server builds them. */
  const node = async (url: string, listenCheckIntervalMs?: number) => {
    const { db, feed } = await nodes.openNode(url, { listenCheckIntervalMs });
    const meta = new PgMetaStore(db);
    const bus = new LocalBus();
    const tenants = new TenantService(meta, clock, undefined, bus);
    tenants.followChanges(feed);
    return { tenants, meta, feed, bus };
  };

  const twoNodes = async (listenCheckIntervalMs?: number) => {
    const url = await nodes.server().createDatabase();
    const a = await node(url, listenCheckIntervalMs);
    const b = await node(url, listenCheckIntervalMs);
    const created = await a.tenants.createTenant({ id: 'acme' });
    // Node B has served the key and the token: both sit in its cache.
    expect((await b.tenants.authenticateApiKey(created.apiKey.key))?.id).toBe('acme');
    expect((await b.tenants.authenticateAdminToken(created.adminToken))?.id).toBe('acme');
    return { a, b, created };
  };

  it('refuses on node B, within a second, an API key revoked on node A, and announces it on B’s bus', async () => {
    const { a, b, created } = await twoNodes();
    const revokedOnB: Array<BusTopics['apiKey.revoked']> = [];
    b.bus.subscribe('apiKey.revoked', (notice) => void revokedOnB.push(notice));
    await a.tenants.revokeApiKey(null, created.apiKey.id);
    await within(ACROSS_NODES_BOUND_MS, async () => (await b.tenants.authenticateApiKey(created.apiKey.key)) === null);
    await within(ACROSS_NODES_BOUND_MS, async () => revokedOnB.length === 1);
    expect(revokedOnB[0]).toEqual({ tenantSeq: created.tenant.seq, keyId: created.apiKey.id, key: created.apiKey.key });
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
    await nodes.server().kill();
    await nodes.server().restart();
    await within(10_000, async () => missed > 0);
    expect(await b.tenants.authenticateApiKey(created.apiKey.key)).toBeNull();
  });
});
