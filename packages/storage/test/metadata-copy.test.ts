import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyMetadata, DuckDbDatabase, PgDatabase, PgMetadataImporter, type MetadataCopyReport, type MetadataStores } from '../src';
import { duckDbMetadata, fillMetadata, metadataSnapshot, pgMetadata } from './metadata-fixture';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';

const available = postgresAvailable();

const KINDS = ['tenants', 'api keys', 'admin tokens', 'campaigns', 'sponsors', 'broadcasts', 'overlays', 'webhook endpoints', 'deletion jobs', 'dashboard sessions'];

const column = (report: MetadataCopyReport, field: 'copied' | 'unchanged' | 'overwritten' | 'conflicts' | 'sourceCount') =>
  Object.fromEntries(report.kinds.map((k) => [k.kind, k[field]]));

describe.runIf(available)('copying metadata from DuckDB into PostgreSQL', () => {
  let server: PostgresServer;
  let dataDir: string;
  let source: DuckDbDatabase;
  let from: MetadataStores;
  beforeAll(async () => {
    server = await startPostgres();
    dataDir = mkdtempSync(join(tmpdir(), 'svc-metadata-copy-'));
    await fillMetadata(dataDir);
    source = await DuckDbDatabase.open(dataDir);
    from = duckDbMetadata(source);
  });
  afterAll(async () => {
    await source?.close();
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const destination = async () => {
    const db = await PgDatabase.open(await server.createDatabase());
    return { db, to: pgMetadata(db), importer: new PgMetadataImporter(db) };
  };

  it('copies every record of every kind with every field, keeping tenant seqs, and numbers new tenants past them', async () => {
    const { db, to, importer } = await destination();
    const report = await copyMetadata(from, to, importer);
    expect(report.conflicts).toEqual([]);
    expect(report.countsMatch).toBe(true);
    expect(report.kinds.map((k) => k.kind)).toEqual(KINDS);
    // Default campaigns (1 and 9) come with their tenants, 42 with its discovered broadcast.
    expect(column(report, 'copied')).toEqual({
      tenants: 2, 'api keys': 4, 'admin tokens': 4, campaigns: 5, sponsors: 2, broadcasts: 2, overlays: 2,
      'webhook endpoints': 2, 'deletion jobs': 3, 'dashboard sessions': 2,
    });
    const copied = await metadataSnapshot(to);
    expect(copied).toEqual(await metadataSnapshot(from));
    expect((copied.tenants as Array<{ seq: number }>).map((t) => t.seq)).toEqual([4, 5]);
    const next = await to.meta.createTenant({ id: 'after', name: 'After', retentionMonths: 12, settings: (await to.meta.getTenant('acme'))!.settings, createdAt: 0 });
    expect(next.seq).toBe(6);
    await db.close();
  });

  it('copies nothing and changes nothing the second time', async () => {
    const { db, to, importer } = await destination();
    const first = await copyMetadata(from, to, importer);
    const before = await metadataSnapshot(to);
    const second = await copyMetadata(from, to, importer);
    expect(second.conflicts).toEqual([]);
    expect(second.countsMatch).toBe(true);
    expect(Object.values(column(second, 'copied')).every((n) => n === 0)).toBe(true);
    expect(column(second, 'unchanged')).toEqual(column(first, 'copied'));
    expect(await metadataSnapshot(to)).toEqual(before);
    await db.close();
  });

  it('reports a record held with other content and leaves it, and replaces it only when told to overwrite', async () => {
    const { db, to, importer } = await destination();
    await copyMetadata(from, to, importer);
    const acme = (await to.meta.getTenant('acme'))!;
    await to.content.updateSponsor(acme.seq, 'sp_1', { name: 'Changed in PostgreSQL' });
    await to.meta.revokeApiKey(acme.seq, 'ak_acme_1', 1);

    const reported = await copyMetadata(from, to, importer);
    expect(reported.conflicts).toEqual([
      { kind: 'api keys', record: 'acme/ak_acme_1', reason: 'the destination holds it with other content: revokedAt' },
      { kind: 'sponsors', record: 'acme/sp_1', reason: 'the destination holds it with other content: name' },
    ]);
    expect(column(reported, 'conflicts')).toMatchObject({ 'api keys': 1, sponsors: 1, tenants: 0 });
    expect((await to.content.getSponsor(acme.seq, 'sp_1'))!.name).toBe('Changed in PostgreSQL');
    expect((await to.meta.findApiKey('pk_acme_1'))!.revokedAt).toBe(1);

    const overwritten = await copyMetadata(from, to, importer, { overwrite: true });
    expect(overwritten.conflicts).toEqual([]);
    expect(column(overwritten, 'overwritten')).toMatchObject({ 'api keys': 1, sponsors: 1 });
    expect(await metadataSnapshot(to)).toEqual(await metadataSnapshot(from));
    await db.close();
  });

  it('never writes over another tenant holding the seq or the id, and copies none of its records', async () => {
    const { db, to, importer } = await destination();
    // Seqs 1-4 taken in PostgreSQL: `other` gets 4, which acme has in DuckDB.
    for (const id of ['one', 'two', 'three', 'other']) {
      await to.meta.createTenant({ id, name: id, retentionMonths: 12, settings: (await from.meta.getTenant('acme'))!.settings, createdAt: 0 });
    }
    const report = await copyMetadata(from, to, importer, { overwrite: true });
    expect(report.conflicts).toEqual([
      { kind: 'tenants', record: 'acme (seq 4)', reason: 'its seq 4 belongs to tenant "other" in the destination; its records are not copied' },
    ]);
    expect(await to.meta.getTenant('acme')).toBeNull();
    expect(await to.content.listSponsors(4)).toEqual([]);
    expect(await to.meta.listApiKeys(4)).toEqual([]);
    // beta (seq 5) is copied whole.
    expect(await metadataSnapshot(to, ['beta'])).toEqual(await metadataSnapshot(from, ['beta']));
    expect(report.countsMatch).toBe(true);
    await db.close();
  });
});
