import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgContentStore, PgDatabase, PgMetaStore } from '../src';
import { contentStoreContract } from './content-store-contract';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';
import { TEST_SETTINGS } from './postgres-nodes';

const available = postgresAvailable();

const settings = TEST_SETTINGS;

describe.runIf(available)('PostgreSQL content', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  contentStoreContract('PostgreSQL', async () => {
    const db = await PgDatabase.open(await server.createDatabase());
    return { meta: new PgMetaStore(db), content: new PgContentStore(db), close: () => db.close() };
  });

  // Production databases are often created with a language's collation, where "B" sorts after
  // "a": lists must keep DuckDB's byte order of ids there too.
  let collated = 0;
  contentStoreContract('PostgreSQL (en-US collation)', async () => {
    const name = `svc_en_us_${++collated}`;
    const admin = postgres(server.url, { max: 1, onnotice: () => undefined });
    try {
      await admin`CREATE DATABASE ${admin(name)} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'`;
    } finally {
      await admin.end();
    }
    const db = await PgDatabase.open(server.url.replace(/\/postgres$/, `/${name}`));
    return { meta: new PgMetaStore(db), content: new PgContentStore(db), close: () => db.close() };
  });

  /** Two nodes on one database, each with its own pool, and a tenant they share. */
  const twoNodes = async () => {
    const url = await server.createDatabase();
    const [a, b] = await Promise.all([PgDatabase.open(url, { poolSize: 2 }), PgDatabase.open(url, { poolSize: 2 })]);
    const tenant = await new PgMetaStore(a!).createTenant({ id: 'race', name: 'Race', retentionMonths: 12, createdAt: 0, settings });
    return { tenant, nodeA: new PgContentStore(a!), nodeB: new PgContentStore(b!), close: () => Promise.all([a!.close(), b!.close()]) };
  };

  it('gives each of many creates without an id on two nodes at the same moment an id of its own, losing none', async () => {
    const { tenant, nodeA, nodeB, close } = await twoNodes();
    // 12 at once on each node: more than any number of draws a create could retry.
    const names = Array.from({ length: 24 }, (_, i) => `${i % 2 ? 'B' : 'A'}${i}`);
    const ids = await Promise.all(names.map((name, i) => (i % 2 ? nodeB : nodeA).createCampaignWithNextId(tenant.seq, name, 0)));
    expect(ids.every((id) => id !== null)).toBe(true);
    expect(new Set(ids).size).toBe(names.length);
    // Every create is stored under the id it answered with, next to the default campaign 1.
    const stored = await nodeB.listCampaigns(tenant.seq);
    expect(stored.map((c) => c.id)).toEqual(Array.from({ length: names.length + 1 }, (_, i) => i + 1));
    for (const [i, id] of ids.entries()) expect((await nodeA.getCampaign(tenant.seq, id!))?.name).toBe(names[i]);
    await close();
  });

  it('lets only one of two nodes create the same sponsor, broadcast or campaign id at the same moment', async () => {
    const { tenant, nodeA, nodeB, close } = await twoNodes();
    for (let i = 0; i < 10; i++) {
      const sponsors = await Promise.all(
        [nodeA, nodeB].map((node, n) => node.createSponsor({ tenantSeq: tenant.seq, id: `sp_${i}`, name: `by ${n}`, logoUrl: null, createdAt: 0 })),
      );
      const broadcasts = await Promise.all(
        [nodeA, nodeB].map((node, n) => node.createBroadcast({ tenantSeq: tenant.seq, id: `b_${i}`, campaignId: 1, title: `by ${n}`, createdAt: 0 })),
      );
      const campaigns = await Promise.all([nodeA, nodeB].map((node, n) => node.createCampaign({ tenantSeq: tenant.seq, id: 100 + i, name: `by ${n}`, createdAt: 0 })));
      for (const outcome of [sponsors, broadcasts, campaigns]) expect(outcome.filter(Boolean)).toHaveLength(1);
      // What is stored is the winner's.
      expect((await nodeB.getSponsor(tenant.seq, `sp_${i}`))?.name).toBe(`by ${sponsors.indexOf(true)}`);
      expect((await nodeA.getBroadcast(tenant.seq, `b_${i}`))?.title).toBe(`by ${broadcasts.indexOf(true)}`);
      expect((await nodeB.getCampaign(tenant.seq, 100 + i))?.name).toBe(`by ${campaigns.indexOf(true)}`);
    }
    await close();
  });

  it('shows an overlay created on one node to the other, and its changes', async () => {
    const { tenant, nodeA, nodeB, close } = await twoNodes();
    const content = { type: 'lineup' as const, items: [{ title: 'Kick-off' }] };
    await nodeA.createOverlay({ tenantSeq: tenant.seq, broadcastId: 'b1', id: 'line_1', type: 'lineup', content, active: false, createdAt: 10, updatedAt: 10, shownAt: null });
    expect((await nodeB.listOverlays(tenant.seq, 'b1')).map((o) => o.id)).toEqual(['line_1']);
    await nodeB.updateOverlay(tenant.seq, 'line_1', { active: true, shownAt: 20 }, 20);
    expect(await nodeA.getOverlay(tenant.seq, 'line_1')).toMatchObject({ active: true, shownAt: 20, updatedAt: 20 });
    await close();
  });

  it('fails with storage_unavailable while the server is down, and works again once it is back', async () => {
    const own = await startPostgres();
    try {
      const db = await PgDatabase.open(await own.createDatabase());
      const content = new PgContentStore(db);
      const tenant = await new PgMetaStore(db).createTenant({ id: 'down', name: 'Down', retentionMonths: 12, createdAt: 0, settings });
      await own.kill();
      const unavailable = expect.objectContaining({ code: 'storage_unavailable', status: 503 });
      await expect(content.nextCampaignId(tenant.seq)).rejects.toEqual(unavailable);
      await expect(content.createCampaign({ tenantSeq: tenant.seq, id: 2, name: 'Two', createdAt: 0 })).rejects.toEqual(unavailable);
      await expect(content.listOverlays(tenant.seq, 'b1')).rejects.toEqual(unavailable);
      await expect(content.updateOverlay(tenant.seq, 'o', { active: true }, 1)).rejects.toEqual(unavailable);
      await own.restart();
      expect(await content.createCampaign({ tenantSeq: tenant.seq, id: 2, name: 'Two', createdAt: 0 })).toBe(true);
      expect((await content.listCampaigns(tenant.seq)).map((c) => c.id)).toEqual([1, 2]);
      await db.close();
    } finally {
      await own.stop();
    }
  });
});
