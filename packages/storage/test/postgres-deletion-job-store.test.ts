import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDatabase, PgDeletionJobStore, type DeletionJob } from '../src';
import { deletionJobStoreContract, pendingJob } from './deletion-job-store-contract';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';

const available = postgresAvailable();
const LEASE_MS = 60_000;

describe.runIf(available)('PostgreSQL deletion jobs', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  deletionJobStoreContract('PostgreSQL', async () => {
    const db = await PgDatabase.open(await server.createDatabase());
    return { deletions: new PgDeletionJobStore(db), close: () => db.close() };
  });

  /** Two nodes: a pool each on one fresh database. */
  const twoNodes = async () => {
    const url = await server.createDatabase();
    const [a, b] = await Promise.all([PgDatabase.open(url, { poolSize: 4 }), PgDatabase.open(url, { poolSize: 4 })]);
    return { a: new PgDeletionJobStore(a!), b: new PgDeletionJobStore(b!), close: () => Promise.all([a!.close(), b!.close()]) };
  };

  describe('several nodes', () => {
    it('never gives two nodes claiming at the same moment the same job', async () => {
      const { a, b, close } = await twoNodes();
      // One job at a time, both nodes after it with several claims each.
      for (let round = 0; round < 15; round++) {
        await a.create(pendingJob(`del_single_${round}`, `s${round}`, round));
        const claims = await Promise.all([0, 1, 2].flatMap((i) => [a.claimNext(`a${i}`, 1_000, LEASE_MS), b.claimNext(`b${i}`, 1_000, LEASE_MS)]));
        expect(claims.filter((job) => job !== null).map((job) => job.id)).toEqual([`del_single_${round}`]);
      }
      // Many jobs, both nodes draining them as fast as they can.
      const ids = Array.from({ length: 40 }, (_, i) => `del_${String(i).padStart(2, '0')}`);
      for (const [i, id] of ids.entries()) await b.create(pendingJob(id, id, 100 + i));
      const drain = async (node: PgDeletionJobStore, name: string) => {
        const taken: string[] = [];
        for (let job: DeletionJob | null; (job = await node.claimNext(name, 1_000, LEASE_MS)); ) taken.push(job.id);
        return taken;
      };
      const taken = (await Promise.all([drain(a, 'a1'), drain(a, 'a2'), drain(b, 'b1'), drain(b, 'b2')])).flat();
      expect(taken.sort()).toEqual(ids);
      await close();
    });

    it("lets another node claim a job whose node's lease expired, and not before", async () => {
      const { a, b, close } = await twoNodes();
      await a.create(pendingJob('del_1', 'u1', 1));
      expect((await a.claimNext('node-a', 0, LEASE_MS))?.id).toBe('del_1');
      // Node a renews once, then dies.
      expect(await a.renewLease('del_1', 'node-a', 20_000, LEASE_MS)).toBe(true);
      expect(await b.claimNext('node-b', 79_999, LEASE_MS)).toBeNull();
      const resumed = await b.claimNext('node-b', 80_000, LEASE_MS);
      expect(resumed).toMatchObject({ id: 'del_1', status: 'running' });
      // Node a, back from a pause, no longer holds the job.
      expect(await a.renewLease('del_1', 'node-a', 80_001, LEASE_MS)).toBe(false);
      await a.releaseLease('del_1', 'node-a');
      expect((await b.get(1, 'del_1'))?.status).toBe('running');
      expect(await a.claimNext('node-a', 80_001, LEASE_MS)).toBeNull();
      await b.markCompleted('del_1', 80_002, { deletedEvents: 0, deletedRejects: 0 });
      await close();
    });

    it('never claims a completed job, even when another node completes it while claims are made', async () => {
      const { a, b, close } = await twoNodes();
      for (let round = 0; round < 10; round++) {
        const id = `del_${round}`;
        await a.create(pendingJob(id, id, round));
        await a.claimNext('node-a', 0, LEASE_MS);
        // Node b tries as node a's lease expires and node a completes the job.
        const [claimed] = await Promise.all([
          b.claimNext('node-b', LEASE_MS, LEASE_MS),
          a.markCompleted(id, LEASE_MS, { deletedEvents: 1, deletedRejects: 0 }),
        ]);
        // Claimed just before the completion, or not at all; completed either way.
        if (claimed) expect(claimed.id).toBe(id);
        expect((await b.get(1, id))?.status).toBe('completed');
        expect(await b.claimNext('node-b', 10 * LEASE_MS, LEASE_MS)).toBeNull();
        expect(await a.claimNext('node-a', 10 * LEASE_MS, LEASE_MS)).toBeNull();
      }
      await close();
    });
  });
});
