import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalBus, ManualClock, type BusTopics } from '@svc/protocol';
import { InProcessChangeFeed, openEmbeddedStorage, type MetadataChange, type Storage } from '@svc/storage';
import { TenantService } from '../src/tenant-service';

describe('credentials with the in-process change feed (embedded default)', () => {
  let storage: Storage | null = null;
  afterEach(async () => {
    await storage?.close();
    storage = null;
  });

  it('refuses a revoked key at once, publishes the revocation, and announces it on the bus once', async () => {
    storage = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-tenancy-')));
    const feed = new InProcessChangeFeed();
    const published: MetadataChange[] = [];
    feed.subscribe({ changed: (change) => published.push(change), missedChanges: () => {} });
    const bus = new LocalBus();
    const tenants = new TenantService(storage.meta, new ManualClock(), undefined, bus);
    tenants.followChanges(feed);
    const revoked: Array<BusTopics['apiKey.revoked']> = [];
    bus.subscribe('apiKey.revoked', (notice) => void revoked.push(notice));
    const created = await tenants.createTenant({ id: 'solo' });
    expect((await tenants.authenticateApiKey(created.apiKey.key))?.id).toBe('solo');
    await tenants.revokeApiKey(created.tenant.seq, created.apiKey.id);
    expect(await tenants.authenticateApiKey(created.apiKey.key)).toBeNull();
    expect(published).toEqual([{ kind: 'api_key', tenantSeq: created.tenant.seq, id: created.apiKey.id }]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(revoked).toEqual([{ tenantSeq: created.tenant.seq, keyId: created.apiKey.id, key: created.apiKey.key }]);
  });

  it('publishes a settings change as a change of the tenant', async () => {
    storage = await openEmbeddedStorage(mkdtempSync(join(tmpdir(), 'svc-tenancy-')));
    const feed = new InProcessChangeFeed();
    const published: MetadataChange[] = [];
    feed.subscribe({ changed: (change) => published.push(change), missedChanges: () => {} });
    const tenants = new TenantService(storage.meta, new ManualClock());
    tenants.followChanges(feed);
    const created = await tenants.createTenant({ id: 'solo' });
    await tenants.updateSettings(created.tenant, { theme: { primaryColor: '#abcdef' } });
    expect(published).toEqual([{ kind: 'tenant', tenantSeq: created.tenant.seq }]);
    expect((await tenants.authenticateApiKey(created.apiKey.key))?.settings.theme.primaryColor).toBe('#abcdef');
  });
});
