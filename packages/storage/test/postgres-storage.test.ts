import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDatabase, PgMetaStore } from '../src';
import { PG_MIGRATIONS } from '../src/postgres/pg-migrations';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';
import { metaStoreContract } from './store-contract';

const available = postgresAvailable();

describe.runIf(available)('PostgreSQL metadata', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  const openMeta = async () => {
    const db = await PgDatabase.open(await server.createDatabase());
    return { db, meta: new PgMetaStore(db), close: () => db.close() };
  };

  metaStoreContract('PostgreSQL', openMeta);

  /** Rows of one query on a connection of its own, outside the code under test. */
  const query = async <T extends object>(url: string, run: (sql: postgres.Sql) => Promise<T[]>): Promise<T[]> => {
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      return await run(sql);
    } finally {
      await sql.end();
    }
  };

  describe('database', () => {
    it('applies each migration once when four nodes open an empty database at the same moment', async () => {
      const url = await server.createDatabase();
      const opened = await Promise.all(Array.from({ length: 4 }, () => PgDatabase.open(url, { poolSize: 2 })));
      const rows = await query(url, (sql) => sql<{ version: number; n: string }[]>`SELECT version, count(*) AS n FROM schema_migrations GROUP BY version ORDER BY version`);
      expect(rows.map((r) => [r.version, Number(r.n)])).toEqual(PG_MIGRATIONS.map((m) => [m.version, 1]));
      // Opening again applies nothing and fails nothing.
      opened.push(await PgDatabase.open(url));
      expect(await query(url, (sql) => sql`SELECT version FROM schema_migrations`)).toHaveLength(PG_MIGRATIONS.length);
      await Promise.all(opened.map((db) => db.close()));
    });

    it('fails with storage_unavailable while the server is down and recovers without reopening', async () => {
      const { db, meta, close } = await openMeta();
      const tenant = await meta.createTenant({
        id: 'down', name: 'Down', retentionMonths: 12, createdAt: 0,
        settings: { theme: { primaryColor: '#000000' }, featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true }, localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR', allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1 },
      });
      await db.ping();
      const unavailable = expect.objectContaining({ code: 'storage_unavailable', status: 503, headers: { 'retry-after': '5' } });
      // A query under way when the server dies fails too, and nothing is left to crash the process.
      const inFlight = db.run((sql) => sql`SELECT pg_sleep(30)`).then(() => 'answered', (error: unknown) => error);
      const started = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 200));
      await server.kill();
      expect(await inFlight).toEqual(unavailable);
      expect(Date.now() - started).toBeLessThan(10_000);
      await expect(db.ping()).rejects.toEqual(unavailable);
      await expect(meta.getTenant('down')).rejects.toEqual(unavailable);
      await expect(meta.createTenant({ ...tenant, id: 'down2' })).rejects.toEqual(unavailable);
      await expect(meta.resolveBroadcasts(tenant.seq, [{ broadcastId: 'b', campaignId: 1 }], 0)).rejects.toEqual(unavailable);
      await server.restart();
      await db.ping();
      expect(await meta.getTenant('down')).toEqual(tenant);
      await close();
    });

    it('refuses to open on a server that does not answer, with storage_unavailable', async () => {
      const closedPort = 'postgres://svc:s3cret@127.0.0.1:1/svc';
      const failure = await PgDatabase.open(closedPort).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'storage_unavailable', message: expect.stringContaining('127.0.0.1:1/svc') });
      expect(String((failure as Error).message)).not.toContain('s3cret');
    });

    it('refuses queries once closed, with a catalogue error', async () => {
      const { db } = await openMeta();
      await db.close();
      await expect(db.ping()).rejects.toEqual(expect.objectContaining({ code: 'not_ready' }));
    });
  });

  describe('broadcast registry', () => {
    it('registers a new broadcast once, under one campaign, when two nodes see it at the same moment', async () => {
      const url = await server.createDatabase();
      const [a, b] = await Promise.all([PgDatabase.open(url), PgDatabase.open(url)]);
      const [nodeA, nodeB] = [new PgMetaStore(a!), new PgMetaStore(b!)];
      const tenant = await nodeA.createTenant({
        id: 'race', name: 'Race', retentionMonths: 12, createdAt: 0,
        settings: { theme: { primaryColor: '#000000' }, featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true }, localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR', allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1 },
      });
      const rounds = 20;
      for (let i = 0; i < rounds; i++) {
        const broadcastId = `live_${i}`;
        const [seenByA, seenByB] = await Promise.all([
          nodeA.resolveBroadcasts(tenant.seq, [{ broadcastId, campaignId: 1000 + i }], 0),
          nodeB.resolveBroadcasts(tenant.seq, [{ broadcastId, campaignId: 2000 + i }], 0),
        ]);
        expect(seenByA.get(broadcastId)).toBeDefined();
        expect(seenByB.get(broadcastId)).toBe(seenByA.get(broadcastId));
      }
      const broadcasts = await query(url, (sql) => sql<{ id: string; campaign_id: string }[]>`SELECT id, campaign_id FROM broadcasts`);
      expect(broadcasts).toHaveLength(rounds);
      const campaigns = await query(url, (sql) => sql<{ id: string }[]>`SELECT id FROM campaigns WHERE id <> 1 ORDER BY id`);
      // One campaign per broadcast: the one it was registered under.
      expect(campaigns.map((c) => c.id).sort()).toEqual(broadcasts.map((r) => r.campaign_id).sort());
      await Promise.all([a!.close(), b!.close()]);
    });
  });
});
