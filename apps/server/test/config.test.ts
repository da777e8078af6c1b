import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config';

describe('configuration from the environment', () => {
  it('runs with the defaults the README documents when nothing is set', () => {
    expect(loadConfig({})).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: resolve('./data'),
      publicUrl: 'http://localhost:8080',
      webhookAllowPrivate: false,
      countryHeader: null,
      logLevel: 'info',
      rateLimit: { perKeyPerSecond: 10_000, perIpPerSecond: 300 },
      processingRegion: 'EU',
      sampleData: true,
    });
  });

  it('reads the database memory limit, and refuses one DuckDB would not understand', () => {
    expect(loadConfig({}).databaseMemoryLimit).toBeUndefined();
    expect(loadConfig({ SVC_DB_MEMORY_LIMIT: '512MB' }).databaseMemoryLimit).toBe('512MB');
    expect(loadConfig({ SVC_DB_MEMORY_LIMIT: '1.5GiB' }).databaseMemoryLimit).toBe('1.5GiB');
    expect(() => loadConfig({ SVC_DB_MEMORY_LIMIT: 'lots' })).toThrow(/SVC_DB_MEMORY_LIMIT must be a size such as 512MB/);
    expect(() => loadConfig({ SVC_DB_MEMORY_LIMIT: '512' })).toThrow(/SVC_DB_MEMORY_LIMIT/);
  });

  it('reads the WebSocket limits per client address, and refuses a share that would let one address take a whole tenant', () => {
    expect(loadConfig({}).realtime).toEqual({});
    expect(
      loadConfig({
        SVC_WS_MAX_CONNECTIONS_PER_ADDRESS: '50',
        SVC_WS_ADDRESS_SHARE_PERCENT: '25',
        SVC_WS_UPGRADES_PER_ADDRESS: '0',
        SVC_WS_UPGRADE_BURST: '20',
        SVC_WS_BAD_KEY_UPGRADE_COST: '5',
        SVC_WS_MAX_OVER_RATE_MS: '2000',
      }).realtime,
    ).toEqual({ maxConnectionsPerAddress: 50, addressSharePercent: 25, upgradesPerAddressPerSecond: 0, upgradeBurst: 20, badKeyUpgradeCost: 5, maxOverRateMs: 2000 });
    expect(() => loadConfig({ SVC_WS_ADDRESS_SHARE_PERCENT: '100' })).toThrow(/SVC_WS_ADDRESS_SHARE_PERCENT must be a whole number from 1 to 99/);
  });

  it('bounds the purge of erased data by SVC_ERASURE_MAX_DELAY_S, an hour unless set', () => {
    expect(loadConfig({}).erasureMaxDelaySeconds).toBe(3600);
    expect(loadConfig({ SVC_ERASURE_MAX_DELAY_S: '0' }).erasureMaxDelaySeconds).toBe(0);
    expect(() => loadConfig({ SVC_ERASURE_MAX_DELAY_S: '-1' })).toThrow(/SVC_ERASURE_MAX_DELAY_S must be a whole number from 0 to 2592000/);
  });

  it('reads the cluster database from SVC_POSTGRES_URL, refusing anything but a postgres URL, and its pool size', () => {
    expect(loadConfig({}).postgresUrl).toBeUndefined();
    expect(loadConfig({ SVC_POSTGRES_URL: 'postgres://svc:s3cret@db.internal:5432/svc' }).postgresUrl).toBe('postgres://svc:s3cret@db.internal:5432/svc');
    expect(loadConfig({ SVC_POSTGRES_URL: 'postgresql://db/svc' }).postgresUrl).toBe('postgresql://db/svc');
    for (const wrong of ['mysql://db/svc', 'db.internal:5432', 'postgres://', 'http://db/svc']) {
      expect(() => loadConfig({ SVC_POSTGRES_URL: wrong })).toThrow(/SVC_POSTGRES_URL must be a PostgreSQL URL such as postgres:\/\/user:password@host:5432\/svc/);
    }
    // The message never repeats what was given: it may hold a password.
    expect(() => loadConfig({ SVC_POSTGRES_URL: 'mysql://u:hunter2@db/svc' })).toThrow(/^(?!.*hunter2)/);
    expect(loadConfig({}).postgresPoolSize).toBeUndefined();
    expect(loadConfig({ SVC_POSTGRES_POOL_SIZE: '4' }).postgresPoolSize).toBe(4);
    expect(() => loadConfig({ SVC_POSTGRES_POOL_SIZE: '0' })).toThrow(/SVC_POSTGRES_POOL_SIZE must be a whole number from 1 to 1000/);
  });

  it('reads the event side of cluster mode: NATS servers and ClickHouse together, only beside PostgreSQL', () => {
    const pg = { SVC_POSTGRES_URL: 'postgres://db/svc' };
    const full = loadConfig({ ...pg, SVC_NATS_URL: 'nats://n1:4222, nats://n2:4222', SVC_CLICKHOUSE_URL: 'http://ch:8123/svc', SVC_NATS_REPLICAS: '3', SVC_NODE_ID: 'node-a' });
    expect(full).toMatchObject({ natsServers: ['nats://n1:4222', 'nats://n2:4222'], clickhouseUrl: 'http://ch:8123/svc', natsReplicas: 3, nodeId: 'node-a' });
    expect(loadConfig({})).toMatchObject({ natsServers: undefined, clickhouseUrl: undefined, natsReplicas: 1 });
    expect(loadConfig({}).nodeId).toMatch(/-\d+$/);
    expect(() => loadConfig({ ...pg, SVC_NATS_URL: 'nats://n1:4222' })).toThrow(/SVC_NATS_URL and SVC_CLICKHOUSE_URL go together/);
    expect(() => loadConfig({ ...pg, SVC_CLICKHOUSE_URL: 'http://ch:8123' })).toThrow(/go together/);
    expect(() => loadConfig({ SVC_NATS_URL: 'nats://n1:4222', SVC_CLICKHOUSE_URL: 'http://ch:8123' })).toThrow(/need SVC_POSTGRES_URL/);
    for (const wrong of ['n1:4222', 'http://n1:4222', 'nats://', ',']) {
      expect(() => loadConfig({ ...pg, SVC_NATS_URL: wrong, SVC_CLICKHOUSE_URL: 'http://ch:8123' })).toThrow(/SVC_NATS_URL must be a comma list of NATS URLs/);
    }
    expect(() => loadConfig({ ...pg, SVC_NATS_URL: 'nats://n1', SVC_CLICKHOUSE_URL: 'tcp://u:hunter2@ch:9000' })).toThrow(/^(?!.*hunter2).*SVC_CLICKHOUSE_URL must be a ClickHouse HTTP URL/);
    expect(() => loadConfig({ ...pg, SVC_NATS_URL: 'nats://n1', SVC_CLICKHOUSE_URL: 'http://ch', SVC_NATS_REPLICAS: '0' })).toThrow(/SVC_NATS_REPLICAS must be a whole number from 1 to 5/);
  });

  it('reads the ack waits of the writers and the webhook dispatchers, a minute each unless set', () => {
    expect(loadConfig({})).toMatchObject({ writerAckWaitMs: 60_000, webhookAckWaitMs: 60_000 });
    expect(loadConfig({ SVC_WRITER_ACK_WAIT_MS: '5000', SVC_WEBHOOK_ACK_WAIT_MS: '20000' })).toMatchObject({ writerAckWaitMs: 5_000, webhookAckWaitMs: 20_000 });
    expect(() => loadConfig({ SVC_WRITER_ACK_WAIT_MS: '999' })).toThrow(/SVC_WRITER_ACK_WAIT_MS must be a whole number from 1000 to 3600000/);
    expect(() => loadConfig({ SVC_WEBHOOK_ACK_WAIT_MS: '1.5' })).toThrow(/SVC_WEBHOOK_ACK_WAIT_MS must be a whole number/);
  });

  it("reads the lease of a deletion job's node, a minute unless set", () => {
    expect(loadConfig({})).toMatchObject({ deletionLeaseMs: 60_000 });
    expect(loadConfig({ SVC_DELETION_LEASE_MS: '3000' })).toMatchObject({ deletionLeaseMs: 3_000 });
    expect(() => loadConfig({ SVC_DELETION_LEASE_MS: '999' })).toThrow(/SVC_DELETION_LEASE_MS must be a whole number from 1000 to 3600000/);
  });

  it('refuses a port that is not a whole number in range', () => {
    expect(loadConfig({ PORT: '9090' }).port).toBe(9090);
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT must be a whole number from 0 to 65535/);
  });
});
