import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessChangeFeed, PgChangeFeed, PgDatabase, type MetadataChange, type MetadataChangeListener } from '../src';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';

const available = postgresAvailable();

/** A listener that records what it hears. */
function recorder() {
  const heard: Array<{ change: MetadataChange; fromThisNode: boolean }> = [];
  let missed = 0;
  const listener: MetadataChangeListener = {
    changed: (change, fromThisNode) => heard.push({ change, fromThisNode }),
    missedChanges: () => void missed++,
  };
  return { listener, heard, missed: () => missed };
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('in-process metadata change feed', () => {
  it('tells this process’s listeners of each change at once, as its own, until they stop', async () => {
    const feed = new InProcessChangeFeed();
    const { listener, heard } = recorder();
    const stop = feed.subscribe(listener);
    await feed.publish({ kind: 'api_key', tenantSeq: 3, id: 'ak_1' });
    expect(heard).toEqual([{ change: { kind: 'api_key', tenantSeq: 3, id: 'ak_1' }, fromThisNode: true }]);
    stop();
    await feed.publish({ kind: 'tenant', tenantSeq: 3 });
    expect(heard).toHaveLength(1);
  });

  it('still tells the other listeners when one throws', async () => {
    const feed = new InProcessChangeFeed();
    feed.subscribe({ changed: () => { throw new Error('broken listener'); }, missedChanges: () => {} });
    const { listener, heard } = recorder();
    feed.subscribe(listener);
    await feed.publish({ kind: 'overlay', tenantSeq: 1, id: 'poll_1' });
    expect(heard).toHaveLength(1);
  });
});

describe.runIf(available)('PostgreSQL metadata change feed (LISTEN/NOTIFY)', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Two nodes: two pools on one database, each with its feed. */
  const twoNodes = async (listenCheckIntervalMs?: number) => {
    const url = await server.createDatabase();
    const dbs = await Promise.all([PgDatabase.open(url, { poolSize: 2 }), PgDatabase.open(url, { poolSize: 2 })]);
    const feeds = await Promise.all(dbs.map((db) => PgChangeFeed.start(db, { listenCheckIntervalMs })));
    return {
      a: feeds[0]!,
      b: feeds[1]!,
      close: async () => {
        for (const feed of feeds) await feed.close();
        for (const db of dbs) await db.close();
      },
    };
  };

  it('delivers a notice published on one node to the other, and to the first as its own', async () => {
    const { a, b, close } = await twoNodes();
    try {
      const onA = recorder();
      const onB = recorder();
      a.subscribe(onA.listener);
      b.subscribe(onB.listener);
      const change: MetadataChange = { kind: 'webhook_endpoint', tenantSeq: 7, id: 'wh_x' };
      await a.publish(change);
      await until(() => onB.heard.length === 1 && onA.heard.length === 1);
      expect(onB.heard).toEqual([{ change, fromThisNode: false }]);
      expect(onA.heard).toEqual([{ change, fromThisNode: true }]);
      expect(onB.missed()).toBe(0);
    } finally {
      await close();
    }
  });

  it('ignores payloads it cannot read on its channel', async () => {
    const { a, b, close } = await twoNodes();
    try {
      const onB = recorder();
      b.subscribe(onB.listener);
      // Another writer on the channel (an operator, a newer node) sends something else first.
      await (a as unknown as { db: PgDatabase }).db.run((sql) => sql.notify('svc_metadata_changes', 'not json'));
      await (a as unknown as { db: PgDatabase }).db.run((sql) =>
        sql.notify('svc_metadata_changes', JSON.stringify({ origin: 'x', change: { kind: 'something_new', tenantSeq: 1 } })),
      );
      await a.publish({ kind: 'tenant', tenantSeq: 1 });
      await until(() => onB.heard.length === 1);
      expect(onB.heard[0]!.change).toEqual({ kind: 'tenant', tenantSeq: 1 });
    } finally {
      await close();
    }
  });

  it('after the server is killed and restarted, tells listeners they missed changes and delivers notices again', async () => {
    const { a, b, close } = await twoNodes(100);
    try {
      const onA = recorder();
      const onB = recorder();
      a.subscribe(onA.listener);
      b.subscribe(onB.listener);
      await server.kill();
      // Long enough for postgres.js's own immediate re-listen to have failed against the dead server.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await server.restart();
      await until(() => onA.missed() > 0 && onB.missed() > 0, 10_000);
      await a.publish({ kind: 'api_key', tenantSeq: 2, id: 'ak_after' });
      await until(() => onB.heard.some((h) => h.change.id === 'ak_after'), 5_000);
      expect(onB.heard.find((h) => h.change.id === 'ak_after')?.fromThisNode).toBe(false);
    } finally {
      await close();
    }
  });

  it('listens again when its LISTEN was lost without the connection breaking, and says changes were missed', async () => {
    const { a, b, close } = await twoNodes(100);
    try {
      const onB = recorder();
      b.subscribe(onB.listener);
      // As if the client had given up listening: no error, no notice ever again, until the check notices.
      await (b as unknown as { listening: { unlisten(): Promise<void> } }).listening.unlisten();
      await until(() => onB.missed() > 0, 5_000);
      await a.publish({ kind: 'overlay', tenantSeq: 9, id: 'poll_again' });
      await until(() => onB.heard.some((h) => h.change.id === 'poll_again'), 5_000);
    } finally {
      await close();
    }
  });

  it('does not fail a publish while the server is down, and delivers again once it is back', async () => {
    const { a, b, close } = await twoNodes(100);
    try {
      const onB = recorder();
      b.subscribe(onB.listener);
      await server.kill();
      // The change itself was committed before; its notice waits for the next check.
      await expect(a.publish({ kind: 'admin_token', tenantSeq: 4, id: 'at_down' })).resolves.toBeUndefined();
      await server.restart();
      await until(() => onB.missed() > 0, 10_000);
      await a.publish({ kind: 'admin_token', tenantSeq: 4, id: 'at_after' });
      await until(() => onB.heard.some((h) => h.change.id === 'at_after'), 5_000);
    } finally {
      await close();
    }
  });
});
