import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DuckDbDatabase, DuckDbDeletionStore, DuckDbEventStore, DuckDbMetaStore, hashUserId, type EventRow } from '../src';

const freshDir = () => mkdtempSync(join(tmpdir(), 'svc-rewrite-'));
const SETTINGS = { theme: { primaryColor: '#000000' }, featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true }, localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR', allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1 };

let counter = 0;
function row(userId: string | null, data = '{}'): EventRow {
  const n = (++counter).toString(16).padStart(12, '0');
  return { tenantSeq: 1, eventId: `0190a6a0-0000-7000-8000-${n}`, event: 'poll.viewed', userId, sessionId: 'svc_s', broadcastId: 'b', campaignId: 1, timestampMs: 1_000 + counter, receivedAtMs: 2, country: null, orderId: null, sponsorId: null, total: null, items: null, data };
}

/** Names of files under `dir` whose bytes contain `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && readFileSync(join(entry.parentPath, entry.name)).includes(needle))
    .map((entry) => entry.name);
}

describe('rewriting the database file', () => {
  it("drops the bytes of an erased user's rows, marks the job purged and keeps every live row, constraint and sequence", async () => {
    const dir = freshDir();
    const db = await DuckDbDatabase.open(dir);
    const meta = new DuckDbMetaStore(db);
    const events = new DuckDbEventStore(db);
    await meta.createTenant({ id: 'first', name: 'First', retentionMonths: 12, createdAt: 0, settings: SETTINGS });
    const kept = Array.from({ length: 1_000 }, () => row('someone-else'));
    await events.commit({ events: [...kept, ...Array.from({ length: 50 }, () => row('gone-user-Xk3'))], rejects: [] });
    const deletions = new DuckDbDeletionStore(db);
    const job = { id: 'del_1', tenantSeq: 1, userHash: hashUserId('gone-user-Xk3'), status: 'pending' as const, requestedAt: 0, completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null };
    await deletions.create(job);
    expect(await deletions.erase(job, 'gone-user-Xk3')).toEqual({ deletedEvents: 50, deletedRejects: 0 });
    expect(await deletions.markCompleted(job.id, 10, { deletedEvents: 50, deletedRejects: 0 })).toMatchObject({ status: 'completed', deletedEvents: 50, purgedAt: null });
    await db.exclusiveWrite((c) => c.run('CHECKPOINT'));
    // The rows are gone, their bytes are not.
    expect(filesHolding(dir, 'gone-user-Xk3')).toContain('svc.duckdb');
    expect(await deletions.oldestUnpurged()).toBe(10);

    // What ErasurePurger does: list the jobs waiting, rewrite, mark them purged.
    expect(await deletions.listUnpurged()).toEqual(['del_1']);
    await deletions.rewriteErased();
    await deletions.markPurged(['del_1'], 20);
    expect(await deletions.get(1, 'del_1')).toMatchObject({ completedAt: 10, purgedAt: 20 });
    expect(await deletions.oldestUnpurged()).toBeNull();
    // Nothing waits: no rewrite.
    expect(await deletions.listUnpurged()).toEqual([]);
    // A commit right after: the write connection is new, and so is its staging table.
    const outcome = await events.commit({ events: [kept[0]!, row('after')], rejects: [] });
    expect(outcome.inserted.size).toBe(1);
    expect((await meta.createTenant({ id: 'second', name: 'Second', retentionMonths: 12, createdAt: 0, settings: SETTINGS })).seq).toBe(2);
    await db.close();

    expect(filesHolding(dir, 'gone-user-Xk3')).toEqual([]);
    const reopened = await DuckDbDatabase.open(dir);
    const [counts] = await reopened.query(`SELECT count(*) AS n, count(*) FILTER (user_id = 'someone-else') AS kept FROM events`);
    expect(counts).toEqual({ n: 1_001n, kept: 1_000n });
    await reopened.close();
  });

  it('lets an export under way go on to its last row, and stores the commits queued while it ran', async () => {
    const db = await DuckDbDatabase.open(freshDir());
    const events = new DuckDbEventStore(db, 100);
    await events.commit({ events: Array.from({ length: 2_000 }, () => row('viewer')), rejects: [] });
    const exported: string[] = [];
    const reading = (async () => {
      for await (const text of events.streamEventText({ tenantSeq: 1 }, 'ndjson')) {
        exported.push(text);
        // A slow client: the rewrite has to wait for it.
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const rewriting = db.rewrite();
    const queued = Array.from({ length: 10 }, () => events.commit({ events: [row('during')], rejects: [] }));
    await Promise.all([reading, rewriting, ...queued]);
    expect(exported.join('').trimEnd().split('\n')).toHaveLength(2_000);
    const [counts] = await db.query(`SELECT count(*) AS n FROM events WHERE user_id = 'during'`);
    expect(counts).toEqual({ n: 10n });
    await db.close();
  });

  it('starts on the old file when a rewrite was cut short before its swap', async () => {
    const dir = freshDir();
    const db = await DuckDbDatabase.open(dir);
    await new DuckDbEventStore(db).commit({ events: [row('kept')], rejects: [] });
    await db.close();
    // What a crash in the middle of the copy leaves beside the database.
    writeFileSync(join(dir, 'svc.duckdb.rewrite'), 'half a file');
    writeFileSync(join(dir, 'svc.duckdb.rewrite.wal'), 'half a log');
    const again = await DuckDbDatabase.open(dir);
    expect(await again.query('SELECT count(*) AS n FROM events')).toEqual([{ n: 1n }]);
    expect(readdirSync(dir).filter((name) => name.includes('rewrite'))).toEqual([]);
    await again.close();
  });
});
