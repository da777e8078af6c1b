import { createReadStream, statSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { uuidv7 } from 'uuidv7';
import { DATABASE_FILE_NAME } from '@svc/storage';
import { cpuSeconds, startService, type Child } from './processes';

/** How often the ingest probe sends one event while the purge runs. */
const PROBE_INTERVAL_MS = 100;
const MiB = 2 ** 20;

export interface PurgeResult {
  /** From starting the service (the purge starts with it) to every job showing purgedAt, s: an upper bound. */
  seconds: number;
  /** CPU the service used in that time, s. */
  cpuSeconds: number;
  fileMiBBefore: number;
  fileMiBAfter: number;
  /** Copies of the deleted userIds in the database file before the purge and after it (clean shutdown; the user deleted during the purge included). */
  hitsBefore: number;
  hitsAfter: number;
  /** Slowest answer to one ingested event while the purge ran, ms (commits wait for it). */
  ingestMaxMs: number;
  ingestRequests: number;
  /** A deletion requested while the purge ran: request → job completed, ms. */
  deletionDuringPurgeMs: number;
}

/** Occurrences of each needle's bytes in a file, read in chunks. */
export async function countInFile(path: string, needles: string[]): Promise<number> {
  const patterns = needles.map((n) => Buffer.from(n, 'utf8'));
  const overlap = Math.max(...patterns.map((p) => p.length)) - 1;
  let carry = Buffer.alloc(0);
  let hits = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 16 * MiB }) as AsyncIterable<Buffer>) {
    const window = Buffer.concat([carry, chunk]);
    for (const pattern of patterns) {
      // A match lying wholly in the carried-over tail was counted with the chunk before.
      for (let i = window.indexOf(pattern); i !== -1; i = window.indexOf(pattern, i + 1)) if (i + pattern.length > carry.length) hits++;
    }
    carry = window.subarray(Math.max(0, window.length - overlap));
  }
  return hits;
}

async function jobOf(server: Child, adminToken: string, location: string): Promise<{ status: string; requestedAt: string; completedAt: string | null; purgedAt: string | null }> {
  const { body } = await request(`${server.url}${location}`, { headers: { authorization: `Bearer ${adminToken}` } });
  return (await body.json()) as { status: string; requestedAt: string; completedAt: string | null; purgedAt: string | null };
}

/**
 * Starts the service on a stopped data folder with SVC_ERASURE_MAX_DELAY_S=0, so that the
 * purge of the finished jobs at `locations` (a rewrite of the database file) starts with it;
 * meanwhile one event is ingested every 100 ms and one more user is deleted, to see what the
 * purge holds up. The file is searched for the deleted userIds before and after.
 */
export async function measurePurge(
  dataDir: string,
  credentials: { apiKey: string; adminToken: string },
  locations: string[],
  deletedUserIds: string[],
  userDeletedDuringPurge: string,
): Promise<PurgeResult> {
  const file = join(dataDir, DATABASE_FILE_NAME);
  const fileMiBBefore = statSync(file).size / MiB;
  const hitsBefore = await countInFile(file, deletedUserIds);
  const spawned = Date.now();
  const server = await startService(dataDir, { SVC_ERASURE_MAX_DELAY_S: '0' }, 300_000);
  const cpu0 = cpuSeconds(server.pid);
  let probing = true;
  const latencies: number[] = [];
  const probe = (async () => {
    while (probing) {
      const t0 = performance.now();
      const { statusCode, body } = await request(`${server.url}/v1/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-svc-api-key': credentials.apiKey },
        body: JSON.stringify({ event: 'poll.viewed', eventId: uuidv7(), sessionId: 'svc_purge_probe', broadcastId: 'purge-probe', timestamp: new Date().toISOString(), data: { pollId: 'poll-1', questionText: 'Probe' } }),
      });
      await body.dump();
      if (statusCode !== 200) throw new Error(`ingest during the purge answered ${statusCode}`);
      latencies.push(performance.now() - t0);
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
    }
  })();
  let deletionDuringPurgeMs = NaN;
  let seconds = NaN;
  let cpu = NaN;
  try {
    const t0 = performance.now();
    const started = await request(`${server.url}/v1/users/${encodeURIComponent(userDeletedDuringPurge)}/events`, { method: 'DELETE', headers: { authorization: `Bearer ${credentials.adminToken}` } });
    await started.body.dump();
    const extra = String(started.headers.location);
    for (;;) {
      const jobs = await Promise.all(locations.map((location) => jobOf(server, credentials.adminToken, location)));
      if (Number.isNaN(deletionDuringPurgeMs) && (await jobOf(server, credentials.adminToken, extra)).status === 'completed') deletionDuringPurgeMs = performance.now() - t0;
      if (jobs.every((job) => job.purgedAt !== null)) {
        seconds = (Math.max(...jobs.map((job) => Date.parse(job.purgedAt!))) - spawned) / 1000;
        cpu = cpuSeconds(server.pid) - cpu0;
        break;
      }
      if (server.exitCode() !== 'running') throw new Error(`the service exited during the purge:\n${server.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The job that completed during the purge is purged by the next one: wait for it as well.
    for (;;) {
      const job = await jobOf(server, credentials.adminToken, extra);
      if (Number.isNaN(deletionDuringPurgeMs) && job.status === 'completed') deletionDuringPurgeMs = performance.now() - t0;
      if (job.purgedAt !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    probing = false;
    await probe.catch(() => undefined);
    await server.stop();
  }
  return {
    seconds,
    cpuSeconds: cpu,
    fileMiBBefore,
    fileMiBAfter: statSync(file).size / MiB,
    hitsBefore,
    hitsAfter: await countInFile(file, [...deletedUserIds, userDeletedDuringPurge]),
    ingestMaxMs: Math.max(...latencies),
    ingestRequests: latencies.length,
    deletionDuringPurgeMs,
  };
}
