import { DuckDbDatabase, type DatabaseOptions } from './duckdb/duckdb-database';
import { DuckDbEventStore } from './duckdb/duckdb-event-store';
import { DuckDbDeletionStore } from './duckdb/duckdb-deletion-store';
import { DuckDbContentStore } from './duckdb/duckdb-content-store';
import { DuckDbWebhookStore } from './duckdb/duckdb-webhook-store';
import { DuckDbAnalyticsStore } from './duckdb/duckdb-analytics-store';
import { PgDatabase, type PgDatabaseOptions } from './postgres/pg-database';
import { PgMetaStore } from './postgres/pg-meta-store';
import { PgContentStore } from './postgres/pg-content-store';
import { PgWebhookEndpointStore } from './postgres/pg-webhook-endpoint-store';
import { PgDeletionJobStore } from './postgres/pg-deletion-job-store';
import { PgSessionStore } from './postgres/pg-session-store';
import { PollCopyingContentStore } from './poll-copying-content-store';
import { PgChangeFeed } from './postgres/pg-change-feed';
import type { Storage } from './open-storage';

export interface ClusterStorageOptions extends DatabaseOptions {
  /** The PostgreSQL pool (size, connect timeout); `PgDatabase`'s defaults when unset. */
  postgres?: PgDatabaseOptions;
}

/**
 * Cluster mode: tenants, credentials, settings, content, webhook endpoints, deletion jobs and
 * dashboard sessions in the PostgreSQL database at `postgresUrl`, shared by every node; the
 * events, the quarantine, votes and entries, the webhook outbox and attempt log and the
 * dashboard rollups in this node's own DuckDB file under `dataDir`, with a copy of the polls
 * that the dashboard's poll results join (see `PollCopyingContentStore`).
 *
 * PostgreSQL is opened first (its migrations run under an advisory lock): a node that cannot
 * reach it does not start. Afterwards an outage makes the metadata calls and `ping` fail with
 * `storage_unavailable` until the pool reconnects by itself.
 */
export async function openClusterStorage(dataDir: string, postgresUrl: string, options: ClusterStorageOptions = {}): Promise<Storage> {
  const { postgres: poolOptions, ...duckDbOptions } = options;
  const pg = await PgDatabase.open(postgresUrl, poolOptions);
  let db: DuckDbDatabase;
  try {
    db = await DuckDbDatabase.open(dataDir, duckDbOptions);
  } catch (error) {
    await pg.close();
    throw error;
  }
  const eventSideContent = new DuckDbContentStore(db);
  const eventSideWebhooks = new DuckDbWebhookStore(db);
  // The dashboard's poll results join votes with their polls in DuckDB: polls are copied there.
  const analytics = new DuckDbAnalyticsStore(db);
  // Votes stored before their poll's copy landed are derived again once it has.
  const content = new PollCopyingContentStore(new PgContentStore(pg), eventSideContent, (tenantSeq, pollIds) => analytics.votesOfPollsCopied(tenantSeq, pollIds));
  let changes: PgChangeFeed;
  try {
    changes = await PgChangeFeed.start(pg);
    // Polls written through other nodes are copied here when their notice arrives.
    content.followChanges(changes);
    await content.copyPolls();
  } catch (error) {
    await Promise.allSettled([db.close(), pg.close()]);
    throw error;
  }
  return {
    events: new DuckDbEventStore(db),
    meta: new PgMetaStore(pg),
    deletions: new PgDeletionJobStore(pg),
    erasure: new DuckDbDeletionStore(db),
    content,
    interactions: eventSideContent,
    webhookEndpoints: new PgWebhookEndpointStore(pg),
    webhookDeliveries: eventSideWebhooks,
    analytics,
    sessions: new PgSessionStore(pg),
    changes,
    ping: async () => {
      await Promise.all([db.ping(), pg.ping()]);
    },
    memoryBytes: () => db.memoryBytes(),
    refusedWrites: () => db.refusedWriteCount(),
    undecodableEvents: () => db.undecodableEventCount(),
    onUndecodableEvents: (listener) => db.onUndecodableEvents(listener),
    close: async () => {
      // Both are closed even when one of them fails to close.
      await changes.close();
      const closed = await Promise.allSettled([db.close(), pg.close()]);
      const failed = closed.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
