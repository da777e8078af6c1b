import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openClusterStorage, openEmbeddedStorage, type EventRow, type MetadataChange, type OverlayRecord, type PollCopyingContentStore } from '../src';
import { postgresAvailable, startPostgres, type PostgresServer } from './postgres-server';
import { TEST_SETTINGS } from './postgres-nodes';

const available = postgresAvailable();

const settings = TEST_SETTINGS;

const poll = (tenantSeq: number, id: string): OverlayRecord => ({
  tenantSeq, broadcastId: 'b1', id, type: 'poll', content: { type: 'poll', question: `Which ${id}?`, options: ['x', 'y'] },
  active: false, createdAt: 10, updatedAt: 10, shownAt: null,
});

describe.runIf(available)('cluster storage: metadata in PostgreSQL, events in each node\'s DuckDB', () => {
  let server: PostgresServer;
  const dirs: string[] = [];
  const dataDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-cluster-'));
    dirs.push(dir);
    return dir;
  };
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('shares the metadata between nodes, keeps none of it in DuckDB but a copy of the polls, refreshed at opening', async () => {
    const url = await server.createDatabase();
    const [dirA, dirB] = [dataDir(), dataDir()];
    const a = await openClusterStorage(dirA, url, { postgres: { poolSize: 2 } });
    let b = await openClusterStorage(dirB, url, { postgres: { poolSize: 2 } });
    const tenant = await a.meta.createTenant({ id: 'acme', name: 'Acme', retentionMonths: 12, settings, createdAt: 0 });
    expect(await b.meta.getTenant('acme')).toEqual(tenant);
    await a.content.createOverlay(poll(tenant.seq, 'p1'));
    await a.content.createOverlay(poll(tenant.seq, 'p2'));
    await a.content.createOverlay({ ...poll(tenant.seq, 'lineup'), type: 'lineup', content: { type: 'lineup', items: [] } });
    await a.content.updateOverlay(tenant.seq, 'p2', { content: { type: 'poll', question: 'Changed?', options: ['a', 'b', 'c'] } }, 20);
    expect((await b.content.getOverlay(tenant.seq, 'p1'))?.content).toEqual(poll(tenant.seq, 'p1').content);
    await b.content.deleteOverlay(tenant.seq, 'p1');
    await Promise.all([a.close(), b.close()]);

    // What each node's own file holds: no metadata, the polls as last written through it.
    const fileA = await openEmbeddedStorage(dirA);
    expect(await fileA.meta.listTenants()).toEqual([]);
    expect((await fileA.content.listPolls()).map((p) => [p.id, p.content])).toEqual([
      ['p1', poll(tenant.seq, 'p1').content],
      ['p2', { type: 'poll', question: 'Changed?', options: ['a', 'b', 'c'] }],
    ]);
    await fileA.close();
    // Opened again, a node brings its copies in line with PostgreSQL.
    b = await openClusterStorage(dirB, url, { postgres: { poolSize: 2 } });
    await b.close();
    const again = await openClusterStorage(dirA, url, { postgres: { poolSize: 2 } });
    await again.close();
    for (const dir of [dirA, dirB]) {
      const file = await openEmbeddedStorage(dir);
      expect((await file.content.listPolls()).map((p) => [p.id, p.updatedAt])).toEqual([['p2', 20]]);
      await file.close();
    }
  });

  it('copies into a node\'s DuckDB, when its notice arrives, a poll written through another node', async () => {
    const url = await server.createDatabase();
    const [dirA, dirB] = [dataDir(), dataDir()];
    const a = await openClusterStorage(dirA, url, { postgres: { poolSize: 2 } });
    const b = await openClusterStorage(dirB, url, { postgres: { poolSize: 2 } });
    const heard: MetadataChange[] = [];
    b.changes.subscribe({ changed: (change) => heard.push(change), missedChanges: () => {} });
    const tenant = await a.meta.createTenant({ id: 'acme', name: 'Acme', retentionMonths: 12, settings, createdAt: 0 });
    await a.content.createOverlay(poll(tenant.seq, 'p1'));
    await a.content.createOverlay(poll(tenant.seq, 'p2'));
    await b.content.createOverlay(poll(tenant.seq, 'p3'));
    // As the content service does after each write.
    for (const id of ['p1', 'p2']) await a.changes.publish({ kind: 'overlay', tenantSeq: tenant.seq, id });
    await a.content.deleteOverlay(tenant.seq, 'p3');
    await a.changes.publish({ kind: 'overlay', tenantSeq: tenant.seq, id: 'p3' });
    const deadline = Date.now() + 1_000;
    while (heard.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    await (b.content as PollCopyingContentStore).changesApplied();
    await Promise.all([a.close(), b.close()]);
    const fileB = await openEmbeddedStorage(dirB);
    expect((await fileB.content.listPolls()).map((p) => p.id)).toEqual(['p1', 'p2']);
    await fileB.close();
  });

  it("counts the votes a node stored before its copy of their poll landed, once the copy lands (notice or full copy)", async () => {
    const url = await server.createDatabase();
    const a = await openClusterStorage(dataDir(), url, { postgres: { poolSize: 2 } });
    const b = await openClusterStorage(dataDir(), url, { postgres: { poolSize: 2 } });
    const copies = b.content as PollCopyingContentStore;
    // Heard after the copying store's own listener (subscribed at opening), which queues the copy.
    const heard: MetadataChange[] = [];
    b.changes.subscribe({ changed: (change) => heard.push(change), missedChanges: () => {} });
    const tenant = await a.meta.createTenant({ id: 'acme', name: 'Acme', retentionMonths: 12, settings, createdAt: 0 });
    let n = 0;
    const vote = (pollId: string, sessionId: string, optionIndex: number): EventRow => ({
      tenantSeq: tenant.seq, eventId: `0190a6a0-0000-7000-8000-${String(++n).padStart(12, '0')}`, event: 'poll.voted', userId: null, sessionId,
      broadcastId: 'b1', campaignId: 1, timestampMs: 1_000 + n, receivedAtMs: 1_000 + n, country: null, orderId: null, sponsorId: null,
      total: null, items: null, data: JSON.stringify({ pollId, optionSelected: ['x', 'y'][optionIndex], optionIndex }),
    });
    const votesOn = async (pollId: string) => (await b.analytics.pollResults({ tenantSeq: tenant.seq })).find((r) => r.pollId === pollId)?.options.map((o) => o.votes);
    // Polls created through node A; node B stores votes on them before it has heard of them.
    await a.content.createOverlay(poll(tenant.seq, 'p1'));
    await a.content.createOverlay(poll(tenant.seq, 'p2'));
    await b.events.commit({ events: [vote('p1', 's1', 0), vote('p1', 's2', 1), vote('p2', 's1', 1)], rejects: [] });
    expect(await votesOn('p1')).toBeUndefined();
    // p1's notice arrives: its copy lands, and its votes are derived again.
    await a.changes.publish({ kind: 'overlay', tenantSeq: tenant.seq, id: 'p1' });
    const deadline = Date.now() + 5_000;
    while (!heard.some((change) => change.id === 'p1') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    await copies.changesApplied();
    expect(await votesOn('p1')).toEqual([1, 1]);
    expect(await votesOn('p2')).toBeUndefined();
    // p2's notice is lost: the full copy (made when notices may have been missed) brings it.
    await copies.copyPolls();
    expect(await votesOn('p2')).toEqual([0, 1]);
    // Votes stored since count once each, before and after compaction.
    await b.events.commit({ events: [vote('p1', 's3', 1), vote('p1', 's1', 1)], rejects: [] });
    expect(await votesOn('p1')).toEqual([1, 2]);
    await b.analytics.compact();
    expect(await votesOn('p1')).toEqual([1, 2]);
    // A poll copied again unchanged (a show, a full copy) derives nothing again: same answers.
    await copies.copyPolls();
    expect(await votesOn('p1')).toEqual([1, 2]);
    await Promise.all([a.close(), b.close()]);
  });

  it('fails ping with storage_unavailable while PostgreSQL is down and passes again once it is back', async () => {
    const storage = await openClusterStorage(dataDir(), await server.createDatabase(), { postgres: { poolSize: 2 } });
    await storage.ping();
    await server.kill();
    await expect(storage.ping()).rejects.toMatchObject({ code: 'storage_unavailable', headers: { 'retry-after': '5' } });
    await expect(storage.meta.listTenants()).rejects.toMatchObject({ code: 'storage_unavailable' });
    await server.restart();
    await storage.ping();
    expect(await storage.meta.listTenants()).toEqual([]);
    await storage.close();
  });
});
