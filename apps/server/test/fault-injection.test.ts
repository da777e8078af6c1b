import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { uuidv7 } from 'uuidv7';
import { hashUserId } from '@svc/storage';
import { seededRandom } from '@svc/protocol';
import { openEmbeddedStorage, type EventRow } from '@svc/storage';
import { readStoppedDatabase } from './database-snapshot';
import { spawnSvc, startChildServer, type ChildServer } from './child-server';
import { validEvent } from './events-fixture';
import { faultSeed } from './fault-seed';
import { ADMIN_TOKEN, API_KEY, tempDataDir } from './test-app';
import { WebhookReceiver } from './webhook-receiver';

/**
 * SIGKILL of a real `svc serve` child at random moments, many times over one data folder.
 * The random source is seeded and the seed printed: SVC_FAULT_SEED=<seed> replays the timings.
 */
const KILLS = 20;
const SENDERS = 2;
const EVENTS_PER_REQUEST = 10;
const ERASED_EVENTS = 200;
const OLD_EVENTS_PER_LIFE = 2_000;
const DAY_MS = 86_400_000;
/** Rows in the database before the purge kills: enough that rewriting the file takes a while to kill into. */
const PURGE_KILL_ROWS = 200_000;

/** A stored poll view of tenant `demo` (seq 1) at `timestampMs`. */
function eventRow(timestampMs: number): EventRow {
  return {
    tenantSeq: 1, eventId: uuidv7(), event: 'poll.viewed', userId: null, sessionId: 'svc_fault', broadcastId: 'retention', campaignId: 1,
    timestampMs, receivedAtMs: timestampMs, country: null, orderId: null, sponsorId: null, total: null, items: null,
    data: '{"pollId":"poll-1","questionText":"Who wins tonight?"}',
  };
}

const uniform = (random: () => number) => (min: number, max: number) => min + random() * (max - min);
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function postEvents(url: string, events: Record<string, unknown>[], headers: Record<string, string> = { 'x-svc-api-key': API_KEY }): Promise<boolean> {
  const response = await fetch(`${url}/v1/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ events }),
  });
  const body = (await response.json()) as { accepted?: number; duplicates?: number };
  return response.ok && (body.accepted ?? 0) + (body.duplicates ?? 0) === events.length;
}

/** Event ids the export finds for one filter (`userId=…`, `broadcastId=…`). */
async function exportedIds(url: string, filter: string): Promise<string[]> {
  const response = await fetch(`${url}/v1/analytics/events?format=ndjson&${filter}`, { headers: admin });
  expect(response.status).toBe(200);
  return (await response.text()).split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { eventId: string }).eventId);
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function expectReady(server: ChildServer): Promise<void> {
  const response = await fetch(`${server.url}/readyz`);
  expect(response.status, server.output()).toBe(200);
}

/** Sends batches until `stop()` says so; collects the ids of every batch answered 2xx. */
function startSenders(url: string, broadcastId: string, acknowledged: Set<string>) {
  let stopped = false;
  let sent = 0;
  let answeredAfterKill = 0;
  const send = async () => {
    while (!stopped) {
      const events = Array.from({ length: EVENTS_PER_REQUEST }, () =>
        validEvent('poll.voted', new Date(), { eventId: uuidv7(), userId: `viewer-${sent++ % 50}`, broadcastId }),
      );
      try {
        if (await postEvents(url, events)) {
          for (const e of events) acknowledged.add(String(e.eventId));
          if (stopped) answeredAfterKill++;
        }
      } catch {
        // Connection reset by the kill: never acknowledged.
      }
    }
  };
  const running = Array.from({ length: SENDERS }, send);
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(running);
      return answeredAfterKill;
    },
  };
}

describe('fault injection: SIGKILL at random moments', () => {
  const children: ChildServer[] = [];
  const receiver = new WebhookReceiver();
  afterEach(() => {
    for (const child of children.splice(0)) child.process.kill('SIGKILL');
  });
  afterAll(() => receiver.stop());

  it(`loses no acknowledged event, leaves no half-done deletion and delivers every event after ${KILLS} kills during ingestion, deletion jobs and webhook dispatch`, async () => {
    const seed = faultSeed('ingest/deletion/webhook kills');
    // Kill timings come from one stream; the receiver's delays, drawn concurrently, from another.
    const between = uniform(seededRandom(seed));
    const receiverDelay = uniform(seededRandom(seed + 1));
    await receiver.start();
    // A receiver that takes a moment keeps deliveries in flight when the kill comes.
    receiver.respond = (res) => void setTimeout(() => res.writeHead(200).end(), receiverDelay(5, 50));
    const dataDir = tempDataDir();
    const env = { SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' };
    const acknowledged = new Set<string>();
    const stats = { jobUnfinishedAtKill: 0, jobErasedAtKill: 0, jobDoneAtKill: 0 };
    let secret = '';
    let previous: { round: number; userId: string; jobId: string; acknowledged: Set<string> } | null = null;

    const checkPreviousRound = async (server: ChildServer) => {
      if (!previous) return;
      // The worker resumes the job by itself.
      const jobId = previous.jobId;
      await waitFor(`deletion ${jobId}`, async () => {
        const job = (await (await fetch(`${server.url}/v1/deletions/${jobId}`, { headers: admin })).json()) as { status: string };
        expect(job.status).not.toBe('failed');
        return job.status === 'completed';
      }, 20_000);
      expect(await exportedIds(server.url, `userId=${previous.userId}`)).toEqual([]);
      const stored = new Set(await exportedIds(server.url, `broadcastId=round-${previous.round}`));
      expect([...previous.acknowledged].filter((id) => !stored.has(id))).toEqual([]);
    };

    for (let round = 0; round < KILLS; round++) {
      const server = await startChildServer(env);
      children.push(server);
      await expectReady(server);
      if (round === 0) {
        const created = await fetch(`${server.url}/v1/webhooks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...admin },
          body: JSON.stringify({ url: receiver.url }),
        });
        expect(created.status).toBe(201);
        secret = ((await created.json()) as { secret: string }).secret;
      }
      await checkPreviousRound(server);

      // The user to erase this round has events of its own, all acknowledged.
      const userId = `erase-${round}`;
      for (let i = 0; i < ERASED_EVENTS; i += 100) {
        const events = Array.from({ length: 100 }, () => validEvent('poll.voted', new Date(), { eventId: uuidv7(), userId, broadcastId: 'erased' }));
        expect(await postEvents(server.url, events)).toBe(true);
      }
      const roundAcknowledged = new Set<string>();
      const senders = startSenders(server.url, `round-${round}`, roundAcknowledged);
      await sleep(between(100, 300));
      // The job runs right after its 202; the kill comes a random moment later, while ingestion
      // and webhook dispatch go on.
      const deletion = await fetch(`${server.url}/v1/users/${userId}/events`, { method: 'DELETE', headers: admin });
      expect(deletion.status).toBe(202);
      const jobId = ((await deletion.json()) as { id: string }).id;
      await sleep(between(0, 150));
      server.process.kill('SIGKILL');
      await server.exited;
      expect(await senders.stop()).toBe(0);
      for (const id of roundAcknowledged) acknowledged.add(id);

      // What the kill left: the erasure is one transaction, so the user's events are all there or
      // all gone; a completed job has erased them. The job is marked completed after its erasure
      // (the jobs may live in another database): a kill between the two leaves the events gone and
      // the job to run again after the restart, which erases nothing more (checkPreviousRound).
      const [left] = await readStoppedDatabase<{ events: bigint; done: bigint }>(
        dataDir,
        `SELECT (SELECT count(*) FROM events WHERE user_id = $1) AS events,
                (SELECT count(*) FROM deletion_jobs WHERE user_hash = $2 AND status = 'completed') AS done`,
        [userId, hashUserId(userId)],
      );
      const eventsLeft = Number(left!.events);
      expect([0, ERASED_EVENTS]).toContain(eventsLeft);
      if (Number(left!.done) > 0) {
        expect(eventsLeft).toBe(0);
        stats.jobDoneAtKill++;
      } else if (eventsLeft === 0) stats.jobErasedAtKill++;
      else stats.jobUnfinishedAtKill++;
      previous = { round, userId, jobId, acknowledged: roundAcknowledged };
    }

    const server = await startChildServer(env);
    children.push(server);
    await expectReady(server);
    await checkPreviousRound(server);
    // At least once: every acknowledged event reaches the receiver, signed.
    await waitFor('every acknowledged event at the receiver', async () => {
      const received = new Set(receiver.ids());
      return [...acknowledged].every((id) => received.has(id));
    }, 90_000);
    const verifier = new Webhook(secret);
    for (const request of receiver.received.slice(-20)) verifier.verify(request.body, request.headers as Record<string, string>);
    server.process.kill('SIGTERM');
    expect(await server.exited).toBe(0);

    console.info(`ingest/deletion/webhook kills: ${acknowledged.size} events acknowledged, ${receiver.received.length} deliveries; deletion at kill time: ${stats.jobUnfinishedAtKill} unfinished, ${stats.jobErasedAtKill} erased but not yet marked, ${stats.jobDoneAtKill} done`);
    expect(acknowledged.size).toBeGreaterThan(KILLS * EVENTS_PER_REQUEST);
  }, 420_000);

  it(`keeps every stored event and purges every expired one after ${KILLS} kills during the retention purge at start`, async () => {
    const between = uniform(seededRandom(faultSeed('retention purge kills')));
    const dataDir = tempDataDir();
    const env = { SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN };
    const kept = new Set<string>();
    let purgeUnfinishedAtKill = 0;
    let expiredLeft = 0;

    let started = Date.now();
    const first = await startChildServer(env); // creates the tenant
    let startMs = Date.now() - started;
    let listened = 0;
    children.push(first);
    first.process.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    for (let life = 0; life < KILLS; life++) {
      // Between lives the data folder is opened as the server opens it, checked, and given
      // expired events (two years old, past the default 12 months) for the purge at start.
      const storage = await openEmbeddedStorage(dataDir);
      const expiredNow = await storage.events.countEvents({ tenantSeq: 1, toMs: Date.now() - 365 * DAY_MS });
      // The purge is one transaction: the kill left all of the expired events or none.
      expect([0, expiredLeft]).toContain(expiredNow);
      if (expiredNow > 0) purgeUnfinishedAtKill++;
      const stored = new Set((await storage.events.queryEvents({ tenantSeq: 1, fromMs: Date.now() - DAY_MS }, { limit: 1_000_000 })).map((e) => e.eventId));
      expect([...kept].filter((id) => !stored.has(id))).toEqual([]);
      const expired = Array.from({ length: OLD_EVENTS_PER_LIFE }, () => eventRow(Date.now() - 2 * 365 * DAY_MS));
      const recent = Array.from({ length: 10 }, () => eventRow(Date.now()));
      await storage.events.commit({ events: [...expired, ...recent], rejects: [] });
      for (const e of recent) kept.add(e.eventId);
      expiredLeft = expiredNow + expired.length;
      await storage.close();

      // The purge starts while the server opens, before it listens (the demo broadcast's writes
      // queue behind it), so the kill comes at a random moment late in the start, measured
      // on the start before; a server that got to listen must be ready.
      started = Date.now();
      const child = await spawnSvc(['serve'], env);
      let output = '';
      let listenedAt = 0;
      child.stdout!.on('data', (chunk) => {
        output += chunk;
        if (!listenedAt && output.includes('listening on')) listenedAt = Date.now();
      });
      child.stderr!.on('data', (chunk) => (output += chunk));
      const exited = new Promise((resolve) => child.once('exit', resolve));
      await sleep(between(0.8, 1.6) * startMs);
      const listening = /listening on (\S+)/.exec(output);
      if (listening) {
        listened++;
        expect((await fetch(`${listening[1]}/readyz`)).status, output).toBe(200);
      }
      child.kill('SIGKILL');
      await exited;
      if (listenedAt) startMs = listenedAt - started;
    }

    // A clean start: the purge completes, and it took nothing it should have kept.
    const server = await startChildServer(env);
    children.push(server);
    await expectReady(server);
    server.process.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const storage = await openEmbeddedStorage(dataDir);
    expect(await storage.events.countEvents({ tenantSeq: 1, toMs: Date.now() - 365 * DAY_MS })).toBe(0);
    const stored = new Set((await storage.events.queryEvents({ tenantSeq: 1 }, { limit: 1_000_000 })).map((e) => e.eventId));
    await storage.close();
    expect([...kept].filter((id) => !stored.has(id))).toEqual([]);
    console.info(`retention purge kills: ${kept.size} recent events kept; expired events still there after ${purgeUnfinishedAtKill} of ${KILLS} kills, ${listened} kills after listening`);
  }, 420_000);

  it(`loses no acknowledged event, starts every time and purges every erasure after ${KILLS} kills while erased data is purged from the files`, async () => {
    const between = uniform(seededRandom(faultSeed('erasure purge kills')));
    const dataDir = tempDataDir();
    // No delay: each job's purge (a rewrite of the database file) starts right after it completes.
    const env = { SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN, SVC_ERASURE_MAX_DELAY_S: '0' };
    const first = await startChildServer(env); // creates the tenant
    children.push(first);
    first.process.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const storage = await openEmbeddedStorage(dataDir);
    for (let i = 0; i < PURGE_KILL_ROWS; i += 20_000) {
      await storage.events.commit({ events: Array.from({ length: 20_000 }, () => eventRow(Date.now() - DAY_MS)), rejects: [] });
    }
    await storage.close();

    const victim = (round: number) => `purge-victim-${String(round).padStart(2, '0')}-x`;
    const acknowledged = new Set<string>();
    const stats = { duringRewrite: 0, purgedAtKill: 0 };
    let previous: { userId: string; jobId: string; acknowledged: Set<string> } | null = null;
    const checkPreviousRound = async (server: ChildServer) => {
      if (!previous) return;
      const jobId = previous.jobId;
      await waitFor(`purge of ${jobId}`, async () => {
        const job = (await (await fetch(`${server.url}/v1/deletions/${jobId}`, { headers: admin })).json()) as { status: string; purgedAt: string | null };
        expect(job.status).not.toBe('failed');
        return job.purgedAt !== null;
      }, 30_000);
      expect(await exportedIds(server.url, `userId=${previous.userId}`)).toEqual([]);
    };

    for (let round = 0; round < KILLS; round++) {
      const server = await startChildServer(env);
      children.push(server);
      await expectReady(server);
      await checkPreviousRound(server);
      const userId = victim(round);
      const events = Array.from({ length: 100 }, () => validEvent('poll.voted', new Date(), { eventId: uuidv7(), userId, broadcastId: 'erased' }));
      expect(await postEvents(server.url, events)).toBe(true);
      const roundAcknowledged = new Set<string>();
      const senders = startSenders(server.url, `purge-round-${round}`, roundAcknowledged);
      await sleep(between(50, 200));
      const deletion = await fetch(`${server.url}/v1/users/${userId}/events`, { method: 'DELETE', headers: admin });
      expect(deletion.status).toBe(202);
      const jobId = ((await deletion.json()) as { id: string }).id;
      // The rewrite of 200,000 rows takes about a second here: the kill falls before, in or after it.
      await sleep(between(0, 2_500));
      if (existsSync(join(dataDir, 'svc.duckdb.rewrite'))) stats.duringRewrite++;
      server.process.kill('SIGKILL');
      await server.exited;
      expect(await senders.stop()).toBe(0);
      for (const id of roundAcknowledged) acknowledged.add(id);

      // Whatever the moment, the database is one whole file: the old one or the rewritten one.
      const [left] = await readStoppedDatabase<{ old: bigint; purged: bigint }>(
        dataDir,
        `SELECT (SELECT count(*) FROM events WHERE broadcast_id = 'retention') AS old,
                (SELECT count(*) FROM deletion_jobs WHERE id = $1 AND purged_at IS NOT NULL) AS purged`,
        [jobId],
      );
      expect(Number(left!.old)).toBe(PURGE_KILL_ROWS);
      if (Number(left!.purged) > 0) stats.purgedAtKill++;
      previous = { userId, jobId, acknowledged: roundAcknowledged };
    }

    const server = await startChildServer(env);
    children.push(server);
    await expectReady(server);
    await checkPreviousRound(server);
    const stored = new Set<string>();
    for (let round = 0; round < KILLS; round++) for (const id of await exportedIds(server.url, `broadcastId=purge-round-${round}`)) stored.add(id);
    expect([...acknowledged].filter((id) => !stored.has(id))).toEqual([]);
    server.process.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    // Every job was purged: no victim's id is left in any file of the folder.
    const files = readdirSync(dataDir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
    const found = files.flatMap((entry) => {
      const bytes = readFileSync(join(entry.parentPath, entry.name));
      return Array.from({ length: KILLS }, (_, round) => victim(round)).filter((id) => bytes.includes(id)).map((id) => `${entry.name}: ${id}`);
    });
    expect(found).toEqual([]);
    console.info(`erasure purge kills: ${acknowledged.size} events acknowledged; ${stats.duringRewrite} kills while the rewritten file was being written, ${stats.purgedAtKill} after the job's purge`);
  }, 420_000);
});
