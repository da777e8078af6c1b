import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { hashSessionSecret, PgDatabase, PgSessionStore } from '@svc/storage';
import { postgresAvailable, startPostgres, type PostgresServer } from '../../../packages/storage/test/postgres-server';
import { DashboardSessions, SESSION_TTL_MS } from '../src/dashboard-sessions';

const available = postgresAvailable();

/** Two nodes' dashboard sessions on one PostgreSQL database, each with its own pool. */
describe.runIf(available)('dashboard sessions on PostgreSQL, across nodes', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  const twoNodes = async (clock: ManualClock) => {
    const url = await server.createDatabase();
    const [a, b] = await Promise.all([PgDatabase.open(url, { poolSize: 2 }), PgDatabase.open(url, { poolSize: 2 })]);
    const storeB = new PgSessionStore(b!);
    return {
      nodeA: new DashboardSessions(new PgSessionStore(a!), clock),
      nodeB: new DashboardSessions(storeB, clock),
      storeB,
      close: () => Promise.all([a!.close(), b!.close()]),
    };
  };

  it('finds on one node a session opened on another, and refuses it on the first at once once ended on the second', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 25, 9));
    const { nodeA, nodeB, close } = await twoNodes(clock);
    const secret = await nodeA.open(1, 'e'.repeat(64));
    expect(await nodeB.tokenHashOf(secret)).toBe('e'.repeat(64));
    expect(await nodeA.tokenHashOf(secret)).toBe('e'.repeat(64));
    await nodeB.close(secret);
    expect(await nodeA.tokenHashOf(secret)).toBeNull();
    await close();
  });

  it('refuses an expired session on every node and removes it', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 25, 9));
    const { nodeA, nodeB, storeB, close } = await twoNodes(clock);
    const secret = await nodeA.open(1, 'e'.repeat(64));
    clock.advance(SESSION_TTL_MS);
    expect(await nodeB.tokenHashOf(secret)).toBeNull();
    expect(await storeB.findSession(hashSessionSecret(secret))).toBeNull();
    expect(await nodeA.tokenHashOf(secret)).toBeNull();
    await close();
  });
});
