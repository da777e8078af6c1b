import { afterAll, afterEach, beforeAll } from 'vitest';
import { PgChangeFeed, PgDatabase, type PgChangeFeedOptions } from '../src';
import { startPostgres, type PostgresServer } from './postgres-server';

export { TEST_SETTINGS } from './test-settings';

/** A notice between nodes takes milliseconds; a second is generous. */
export const ACROSS_NODES_BOUND_MS = 1_000;

/** Resolves once `condition` holds; throws when it still does not after `ms`. */
export async function within(ms: number, condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * One throwaway PostgreSQL for the enclosing describe block, and nodes on its databases: each
 * node a pool and a change feed of its own, as the server opens them, closed after each test.
 */
export function postgresNodes(): {
  server(): PostgresServer;
  openNode(url: string, feed?: PgChangeFeedOptions): Promise<{ db: PgDatabase; feed: PgChangeFeed }>;
  /** Runs `close` after the test, before the nodes opened earlier are closed. */
  onClose(close: () => Promise<void>): void;
} {
  let server: PostgresServer | undefined;
  const closing: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });
  return {
    server: () => server!,
    onClose: (close) => {
      closing.push(close);
    },
    openNode: async (url, options) => {
      const db = await PgDatabase.open(url, { poolSize: 2 });
      const feed = await PgChangeFeed.start(db, options);
      closing.push(async () => {
        await feed.close();
        await db.close();
      });
      return { db, feed };
    },
  };
}
