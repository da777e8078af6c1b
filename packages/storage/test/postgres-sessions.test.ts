import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSessionSecret, PgDatabase, PgSessionStore, type SessionRecord } from '../src';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';
import { sessionStoreContract } from './session-store-contract';

const available = postgresAvailable();

describe.runIf(available)('PostgreSQL dashboard sessions', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  sessionStoreContract('PostgreSQL', async () => {
    const db = await PgDatabase.open(await server.createDatabase());
    return { sessions: new PgSessionStore(db), close: () => db.close() };
  });

  /** Two nodes: two pools on one database. */
  const twoNodes = async () => {
    const url = await server.createDatabase();
    const [a, b] = await Promise.all([PgDatabase.open(url, { poolSize: 4 }), PgDatabase.open(url, { poolSize: 4 })]);
    return { url, nodeA: new PgSessionStore(a!), nodeB: new PgSessionStore(b!), close: () => Promise.all([a!.close(), b!.close()]) };
  };

  const record = (secret: string, overrides: Partial<SessionRecord> = {}): SessionRecord => ({
    idHash: hashSessionSecret(secret),
    tenantSeq: 1,
    tokenHash: 'f'.repeat(64),
    createdAt: 1_000,
    expiresAt: 1_000 + 12 * 3_600_000,
    ...overrides,
  });

  it('finds on one node a session opened on another, and refuses it there at once once ended on the first', async () => {
    const { nodeA, nodeB, close } = await twoNodes();
    const opened = record('across');
    await nodeA.createSession(opened);
    expect(await nodeB.findSession(opened.idHash)).toEqual(opened);
    expect(await nodeB.deleteSession(opened.idHash)).toBe(true);
    expect(await nodeA.findSession(opened.idHash)).toBeNull();
    // An admin token's sessions, ended on one node, are gone on the other too.
    await nodeA.createSession(record('token-1'));
    await nodeA.createSession(record('token-2'));
    expect(await nodeB.deleteTokenSessions('f'.repeat(64))).toBe(2);
    expect(await nodeA.findSession(hashSessionSecret('token-1'))).toBeNull();
    await close();
  });

  it('ends each session exactly once when two nodes end and purge at the same moment', async () => {
    const { nodeA, nodeB, close } = await twoNodes();
    const expired = Array.from({ length: 30 }, (_, i) => record(`old-${i}`, { expiresAt: 5_000 }));
    const live = Array.from({ length: 30 }, (_, i) => record(`new-${i}`, { expiresAt: 50_000 }));
    await Promise.all([...expired, ...live].map((r, i) => (i % 2 ? nodeA : nodeB).createSession(r)));
    const [purgedA, purgedB, ...ended] = await Promise.all([
      nodeA.purgeExpiredSessions(10_000),
      nodeB.purgeExpiredSessions(10_000),
      ...live.flatMap((r) => [nodeA.deleteSession(r.idHash), nodeB.deleteSession(r.idHash)]),
    ]);
    expect(purgedA! + purgedB!).toBe(expired.length);
    expect(ended.filter(Boolean)).toHaveLength(live.length);
    await close();
  });

  it('stores the hash of a session secret, never the secret', async () => {
    const { url, nodeA, close } = await twoNodes();
    const secret = 'a-secret-the-cookie-carries-and-nobody-stores';
    await nodeA.createSession(record(secret));
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    const [row] = await sql<{ text: string }[]>`SELECT row_to_json(s)::text AS text FROM dashboard_sessions s`;
    await sql.end();
    expect(row!.text).toContain(hashSessionSecret(secret));
    expect(row!.text).not.toContain(secret);
    await close();
  });
});
