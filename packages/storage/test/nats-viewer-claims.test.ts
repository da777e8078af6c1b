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
      await nodeA.claimVote({ tenantSeq: 7, pollId: 'ov_poll', sessionId: 'svc_session_secretive', userId: 'user-visible@example.com' });
      await nodeA.claimEntry({ tenantSeq: 7, contestId: 'ov_contest', viewer: 'user-visible@example.com' });
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
      const failure = await claims.claimVote({ tenantSeq: 1, pollId: 'ov_poll', sessionId: 'svc_s1', userId: 'user-1' }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(SvcError);
      expect((failure as SvcError).code).toBe('storage_unavailable');
      expect(Date.now() - started).toBeLessThan(2_000);
      await expect(claims.claimEntry({ tenantSeq: 1, contestId: 'ov_contest', viewer: 'user-1' })).rejects.toMatchObject({ code: 'storage_unavailable' });
      await own.restart();
      // The unanswered vote claimed nothing.
      await expect.poll(() => claims.claimVote({ tenantSeq: 1, pollId: 'ov_poll', sessionId: 'svc_s1', userId: 'user-1' }).catch(() => null), { timeout: 10_000, interval: 200 }).toBe(true);
    } finally {
      await connection.close();
      await own.stop();
    }
  }, 30_000);
});
