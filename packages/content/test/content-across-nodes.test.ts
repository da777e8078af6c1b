import { describe, expect, it } from 'vitest';
import type { GroupCommitter } from '@svc/ingest';
import { IngestService } from '@svc/ingest';
import { LocalBus, ManualClock } from '@svc/protocol';
import { PgContentStore, PgDatabase, PgMetaStore, type EventStore, type InteractionStore, type Tenant } from '@svc/storage';
import { postgresAvailable } from '../../storage/test/postgres-server';
import { ACROSS_NODES_BOUND_MS, postgresNodes, TEST_SETTINGS, within } from '../../storage/test/postgres-nodes';
import { ContentService } from '../src/content-service';
import { PollCatalogue } from '../src/poll-catalogue';

const available = postgresAvailable();

const settings = TEST_SETTINGS;

/** No votes cast anywhere: polls may change freely. */
const noInteractions = { listInteractions: async () => [] } as unknown as InteractionStore;


describe.runIf(available)('content changed on one node, in the caches of another', () => {
  const nodes = postgresNodes();
  const clock = new ManualClock(1_767_000_000_000);


  /** A node: content service with its poll catalogue, and ingest's broadcast → campaign cache. */
  const startNode = async (url: string) => {
    const { db, feed } = await nodes.openNode(url);
    const store = new PgContentStore(db);
    const meta = new PgMetaStore(db);
    const polls = await new PollCatalogue().load(store);
    // Only the broadcast → campaign cache of ingest is used here: no events are written.
    const bus = new LocalBus();
    const ingest = new IngestService(meta, null as unknown as EventStore, null as unknown as GroupCommitter, clock, undefined, undefined, undefined, bus);
    const content = new ContentService(store, noInteractions, bus, clock, undefined, polls);
    content.followChanges(feed);
    ingest.followChanges(feed);
    return { content, polls, ingest };
  };

  const twoNodes = async () => {
    const url = await nodes.server().createDatabase();
    const a = await startNode(url);
    const b = await startNode(url);
    const db = await PgDatabase.open(url, { poolSize: 1 });
    const tenant: Tenant = await new PgMetaStore(db).createTenant({ id: 'shows', name: 'Shows', retentionMonths: 12, createdAt: 0, settings });
    await db.close();
    await a.content.createCampaign(tenant, { id: 2, name: 'Final' });
    await a.content.createBroadcast(tenant, { id: 'live', campaignId: 1 });
    return { a, b, tenant, url };
  };

  it('checks votes on node B, within a second, against a poll created, changed and deleted on node A', async () => {
    const { a, b, tenant } = await twoNodes();
    const poll = await a.content.createOverlay(tenant, 'live', { type: 'poll', question: 'Who?', options: ['A', 'B'] });
    await within(ACROSS_NODES_BOUND_MS, () => b.polls.find(tenant.seq, poll.id) !== undefined);
    expect(b.polls.find(tenant.seq, poll.id)?.options).toEqual(['A', 'B']);
    await a.content.updateOverlay(tenant, 'live', poll.id, { question: 'Who?', options: ['A', 'B', 'C'] });
    await within(ACROSS_NODES_BOUND_MS, () => b.polls.find(tenant.seq, poll.id)?.options.length === 3);
    await a.content.deleteOverlay(tenant, 'live', poll.id);
    await within(ACROSS_NODES_BOUND_MS, () => b.polls.find(tenant.seq, poll.id) === undefined);
  });

  it('files events on node B, within a second, under the campaign a broadcast was moved to on node A', async () => {
    const { a, b, tenant } = await twoNodes();
    expect(await b.ingest.campaignOf(tenant, 'live')).toBe(1);
    await a.content.updateBroadcast(tenant, 'live', { campaignId: 2 });
    const deadline = Date.now() + ACROSS_NODES_BOUND_MS;
    while ((await b.ingest.campaignOf(tenant, 'live')) !== 2) {
      if (Date.now() > deadline) throw new Error(`not within ${ACROSS_NODES_BOUND_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  });

  it('reads every poll again after its feed was cut off from the server', async () => {
    const { a, b, tenant, url } = await twoNodes();
    const poll = await a.content.createOverlay(tenant, 'live', { type: 'poll', question: 'Who?', options: ['A', 'B'] });
    await within(ACROSS_NODES_BOUND_MS, () => b.polls.find(tenant.seq, poll.id) !== undefined);
    // Deleted behind every node's back (no notice): only a full reload shows it on node B.
    const db = await PgDatabase.open(url, { poolSize: 1 });
    await new PgContentStore(db).deleteOverlay(tenant.seq, poll.id);
    await db.close();
    expect(b.polls.find(tenant.seq, poll.id)).toBeDefined();
    await nodes.server().kill();
    await nodes.server().restart();
    await within(15_000, () => b.polls.find(tenant.seq, poll.id) === undefined);
  });
});
