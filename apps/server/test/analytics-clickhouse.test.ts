import { afterAll, beforeAll, describe } from 'vitest';
import { pollDefinition } from '@svc/content';
import { ChDatabase, ClickHouseAnalyticsStore, ClickHouseEventStore, eventKey, openEmbeddedStorage, type CommitBatch, type EventStore, type PollLookup, type Storage } from '@svc/storage';
import { insertEvents } from '../../../packages/storage/test/clickhouse-events';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from '../../../packages/storage/test/clickhouse-server';
import { analyticsOverviewTests } from './analytics-overview-suite';
import { startTestApp } from './test-app';

/**
 * Every event the app stores also goes to ClickHouse through its event store, and then a copy
 * of it (another part; merges stopped), as a retried batch may leave there: the overview read
 * from ClickHouse must not see the copies. The other reads stay on the embedded store.
 */
function copyingToClickHouse(events: EventStore, db: ChDatabase): EventStore {
  const clickhouse = new ClickHouseEventStore(db);
  return {
    commit: async (batch: CommitBatch) => {
      const outcome = await events.commit(batch);
      const { inserted } = await clickhouse.commit({ events: batch.events, rejects: [] });
      await insertEvents(db, batch.events.filter((e) => inserted.has(eventKey(e.tenantSeq, e.eventId))));
      return outcome;
    },
    queryEvents: (filter, page) => events.queryEvents(filter, page),
    streamEventText: (filter, format, options) => events.streamEventText(filter, format, options),
    countEvents: (filter) => events.countEvents(filter),
    purgeEventsBefore: (tenantSeq, cutoffMs) => events.purgeEventsBefore(tenantSeq, cutoffMs),
    purgeRejectedBefore: (cutoffMs) => events.purgeRejectedBefore(cutoffMs),
    listRejected: (tenantSeq, options) => events.listRejected(tenantSeq, options),
  };
}

/** The polls as the content store holds them (what the server's poll catalogue is loaded from). */
function contentPolls(storage: Storage): PollLookup {
  return {
    find: async (tenantSeq, pollId) => {
      const overlay = await storage.content.getOverlay(tenantSeq, pollId);
      return overlay?.content.type === 'poll' ? pollDefinition({ ...overlay, content: overlay.content }) : undefined;
    },
  };
}

const available = clickhouseAvailable();

describe.skipIf(!available)('GET /v1/analytics/overview, answered by ClickHouse', () => {
  let server: ClickHouseServer;
  beforeAll(async () => {
    server = await startClickHouse();
  }, 60_000);
  afterAll(() => server?.stop());

  analyticsOverviewTests((options) =>
    startTestApp({
      ...options,
      storage: async (config) => {
        const db = await ChDatabase.open(server.url, await server.createDatabase());
        await db.command('SYSTEM STOP MERGES events');
        const storage = await openEmbeddedStorage(config.dataDir);
        return {
          ...storage,
          events: copyingToClickHouse(storage.events, db),
          analytics: new ClickHouseAnalyticsStore(db, contentPolls(storage)),
          close: async () => {
            await Promise.all([storage.close(), db.close()]);
          },
        };
      },
    }),
  );
});
