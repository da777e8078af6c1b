import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { ManualClock } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectNats, MemorySessionDirectory, NatsSessionDirectory, sessionDirectoryKey, SESSIONS_BUCKET } from '../src';
import { natsAvailable, startNats, type NatsServer } from './nats-server';
import { sessionDirectoryContract } from './session-directory-contract';

const available = natsAvailable();

sessionDirectoryContract('in-memory', async () => {
  const clock = new ManualClock(0);
  const maxAgeMs = 60_000;
  return {
    directory: new MemorySessionDirectory(clock, maxAgeMs),
    maxAgeMs,
    pass: async (ms) => clock.set(clock.now() + ms),
    close: async () => undefined,
  };
});

describe.skipIf(!available)('NATS KV session directory', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    await server?.stop();
  });

  // One NATS server: every backend empties the bucket (its max age is fixed when it is created).
  const open = async (maxAgeMs: number) => {
    const connection = await connectNats(server.url);
    const existing = await new Kvm(connection).open(SESSIONS_BUCKET).catch(() => null);
    await existing?.destroy().catch(() => undefined);
    return { connection, directory: await NatsSessionDirectory.open(connection, { replicas: 1, maxAgeMs }) };
  };

  sessionDirectoryContract('NATS KV', async () => {
    const maxAgeMs = 1_500;
    const { connection, directory } = await open(maxAgeMs);
    return {
      directory,
      maxAgeMs,
      pass: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      close: () => connection.close(),
    };
  });

  it('keeps no session id in clear in its keys, and small JSON values', async () => {
    const { connection, directory } = await open(60_000);
    try {
      await directory.record(7, 'svc_secret_session', { node: 'n1', broadcastId: 'final', joinedAt: 5 });
      const kv = await new Kvm(connection).open(SESSIONS_BUCKET);
      const keys: string[] = [];
      for await (const key of await kv.keys()) keys.push(key);
      expect(keys).toEqual([sessionDirectoryKey(7, 'svc_secret_session')]);
      expect(keys[0]).toMatch(/^7\.[\w-]{43}$/);
      expect(keys[0]).not.toContain('secret');
      const entry = await kv.get(keys[0]!);
      expect(entry?.string()).toBe('{"node":"n1","broadcastId":"final","joinedAt":5}');
      expect((await kv.status()).ttl).toBe(60_000);
    } finally {
      await connection.close();
    }
  });

  it('fails a request within its timeout when the NATS server hangs', async () => {
    const { connection, directory } = await open(60_000);
    const hung = await NatsSessionDirectory.open(connection, { replicas: 1, timeoutMs: 300 });
    await directory.record(1, 'svc_s1', { node: 'n1', broadcastId: 'b', joinedAt: 1 });
    try {
      await server.freeze();
      const startedAt = Date.now();
      const outcomes = await Promise.allSettled([hung.find(1, 'svc_s1'), hung.remove(1, 'svc_s1', { node: 'n1', broadcastId: 'b', joinedAt: 1 })]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
      expect(Date.now() - startedAt).toBeLessThan(1_500);
    } finally {
      server.thaw();
      await connection.close();
    }
  });

  it('fails (rather than hangs) when NATS is gone', async () => {
    const { connection, directory } = await open(60_000);
    await connection.close();
    await expect(directory.find(1, 'svc_s1')).rejects.toThrow();
    await expect(directory.record(1, 'svc_s1', { node: 'n1', broadcastId: 'b', joinedAt: 1 })).rejects.toThrow();
  });

  it('fails to open with storage_unavailable, which a starting node waits out, when JetStream cannot answer', async () => {
    // A cluster restarted on its kept data answers bucket requests only once each bucket has a leader again.
    const connection = await connectNats(server.url);
    await connection.close();
    await expect(NatsSessionDirectory.open(connection, { replicas: 1 })).rejects.toMatchObject({ code: 'storage_unavailable' });
  });
});
