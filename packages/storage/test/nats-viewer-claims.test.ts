import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { SvcError } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIMS_BUCKET, CLAIMS_TTL_MS, NatsViewerClaims, connectNats } from '../src';
import { natsAvailable, startNats, type NatsServer } from './nats-server';
import { viewerClaimsContract } from './viewer-claims-contract';

const available = natsAvailable();

describe.skipIf(!available)('NatsViewerClaims', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Two nodes, each on a connection of its own; the bucket is removed afterwards. */
  const openNodes = async () => {
    const connections: NatsConnection[] = [await connectNats(server.url), await connectNats(server.url)];
    const [nodeA, nodeB] = await Promise.all(connections.map((connection) => NatsViewerClaims.open(connection, { replicas: 1 })));
    return {
      nodeA: nodeA!,
      nodeB: nodeB!,
      connection: connections[0]!,
      close: async () => {
        await (await new Kvm(connections[0]!).open(CLAIMS_BUCKET)).destroy();
        await Promise.all(connections.map((connection) => connection.close()));
      },
    };
  };

  viewerClaimsContract('NatsViewerClaims', openNodes);

  it('keeps claims in a bucket whose keys hold no identifier in clear, for a day', async () => {
    const { nodeA, connection, close } = await openNodes();
    try {
      await nodeA.claimVote({ tenantSeq: 7, pollId: 'ov_poll', sessionId: 'svc_session_secretive', userId: 'user-visible@example.com', attempt: 'attempt-1' });
      await nodeA.claimEntry({ tenantSeq: 7, contestId: 'ov_contest', viewer: 'user-visible@example.com', attempt: 'attempt-1' });
      const kv = await new Kvm(connection).open(CLAIMS_BUCKET);
      const keys: string[] = [];
      for await (const key of await kv.keys()) keys.push(key);
      expect(keys).toHaveLength(3);
      for (const key of keys) {
        expect(key).toMatch(/^7\.(vs|vu|e)\.[\w-]{43}$/);
        expect(key).not.toContain('user-visible');
        expect(key).not.toContain('secretive');
      }
      const status = await kv.status();
      expect(status.ttl).toBe(CLAIMS_TTL_MS);
      expect(status.history).toBe(1);
      expect(status.replicas).toBe(1);
    } finally {
      await close();
    }
  });

  it('answers storage_unavailable within its timeout when NATS is gone, and claims again once it is back', async () => {
    const own = await startNats();
    const connection = await connectNats(own.url, { reconnectWaitMs: 100 });
    try {
      const claims = await NatsViewerClaims.open(connection, { replicas: 1, timeoutMs: 300 });
      await own.kill();
      const started = Date.now();
      const failure = await claims.claimVote({ tenantSeq: 1, pollId: 'ov_poll', sessionId: 'svc_s1', userId: 'user-1', attempt: 'attempt-1' }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(SvcError);
      expect((failure as SvcError).code).toBe('storage_unavailable');
      expect(Date.now() - started).toBeLessThan(2_000);
      await expect(claims.claimEntry({ tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-1', attempt: 'attempt-1' })).rejects.toMatchObject({ code: 'storage_unavailable' });
      await own.restart();
      // The unanswered vote claimed nothing.
      await expect.poll(() => claims.claimVote({ tenantSeq: 1, pollId: 'ov_poll', sessionId: 'svc_s1', userId: 'user-1', attempt: 'attempt-1' }).catch(() => null), { timeout: 10_000, interval: 200 }).toBe(true);
    } finally {
      await connection.close();
      await own.stop();
    }
  }, 30_000);
  describe('a NATS server that hangs (frozen, then thawed)', () => {
    let own: NatsServer;
    let connections: NatsConnection[];
    beforeAll(async () => {
      own = await startNats();
    });
    afterAll(async () => {
      own.thaw();
      await own?.stop();
    });
    /** Two nodes on the hanging server, whose claims time out after 500 ms and give back abandoned ones from 200 ms on. */
    const hangingNodes = async () => {
      connections = [await connectNats(own.url), await connectNats(own.url)];
      const [nodeA, nodeB] = await Promise.all(connections.map((connection) => NatsViewerClaims.open(connection, { replicas: 1, timeoutMs: 500, giveBackFirstWaitMs: 200 })));
      return { nodeA: nodeA!, nodeB: nodeB! };
    };
    const closeNodes = async () => {
      await (await new Kvm(connections[0]!).open(CLAIMS_BUCKET)).destroy();
      await Promise.all(connections.map((connection) => connection.close()));
    };
    /** Runs `request` while the server is frozen: its answer once the claims gave up; the server runs again after. */
    const whileFrozen = async <T>(request: () => Promise<T>): Promise<T | { code?: string }> => {
      try {
        await own.freeze();
        return await request().catch((error: { code?: string }) => error);
      } finally {
        own.thaw();
      }
    };

    it('lets the viewer vote and enter again after a claim that timed out, though it landed once NATS answered again', async () => {
      const { nodeA, close } = { ...(await hangingNodes()), close: closeNodes };
      try {
        const vote = { tenantSeq: 1, pollId: 'ov_poll', sessionId: 'svc_late', userId: 'user-late', attempt: 'attempt-timed-out' };
        const entry = { tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-late', attempt: 'attempt-timed-out' };
        expect(await whileFrozen(() => nodeA.claimVote(vote))).toMatchObject({ code: 'storage_unavailable' });
        expect(await whileFrozen(() => nodeA.claimEntry(entry))).toMatchObject({ code: 'storage_unavailable' });
        // The retries (new attempts) take the claims the timed-out ones left, once each.
        expect(await nodeA.claimVote({ ...vote, attempt: 'attempt-retry' })).toBe(true);
        expect(await nodeA.claimEntry({ ...entry, attempt: 'attempt-retry' })).toBe(true);
        expect(await nodeA.claimVote({ ...vote, sessionId: 'svc_other', attempt: 'attempt-again' })).toBe(false);
        expect(await nodeA.claimEntry({ ...entry, attempt: 'attempt-again' })).toBe(false);
      } finally {
        await close();
      }
    }, 30_000);

    it('gives back in the background a claim that timed out, so that the viewer may vote through another node', async () => {
      const { nodeA, nodeB, close } = { ...(await hangingNodes()), close: closeNodes };
      try {
        const vote = { tenantSeq: 1, pollId: 'ov_poll', sessionId: 'svc_late', userId: 'user-late', attempt: 'attempt-timed-out' };
        const entry = { tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-late', attempt: 'attempt-timed-out' };
        expect(await whileFrozen(() => nodeA.claimVote(vote))).toMatchObject({ code: 'storage_unavailable' });
        expect(await whileFrozen(() => nodeA.claimEntry(entry))).toMatchObject({ code: 'storage_unavailable' });
        await expect.poll(() => nodeA.abandonedClaims, { timeout: 10_000, interval: 100 }).toBe(0);
        expect(await nodeB.claimVote({ ...vote, sessionId: 'svc_other', attempt: 'attempt-on-b' })).toBe(true);
        expect(await nodeB.claimEntry({ ...entry, attempt: 'attempt-on-b' })).toBe(true);
        // Node A gave back only its own attempts: node B's claims stay.
        expect(await nodeA.claimVote({ ...vote, attempt: 'attempt-retry' })).toBe(false);
      } finally {
        await close();
      }
    }, 30_000);

    it('gives back later a release that failed, so that the viewer may vote and enter again', async () => {
      const { nodeA, nodeB, close } = { ...(await hangingNodes()), close: closeNodes };
      try {
        const vote = { tenantSeq: 1, pollId: 'ov_poll', sessionId: 'svc_unstored', userId: 'user-unstored', attempt: 'attempt-unstored' };
        const entry = { tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-unstored', attempt: 'attempt-unstored' };
        expect(await nodeA.claimVote(vote)).toBe(true);
        expect(await nodeA.claimEntry(entry)).toBe(true);
        const started = Date.now();
        // The release neither throws nor hangs while NATS does not answer.
        expect(await whileFrozen(async () => {
          await nodeA.releaseVote(vote);
          await nodeA.releaseEntry(entry);
          return 'released';
        })).toBe('released');
        expect(Date.now() - started).toBeLessThan(2_500);
        await expect.poll(() => nodeA.abandonedClaims, { timeout: 10_000, interval: 100 }).toBe(0);
        expect(await nodeB.claimVote({ ...vote, attempt: 'attempt-on-b' })).toBe(true);
        expect(await nodeB.claimEntry({ ...entry, attempt: 'attempt-on-b' })).toBe(true);
      } finally {
        await close();
      }
    }, 30_000);
  });
});
