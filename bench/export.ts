import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { request } from 'undici';
import { DATABASE_FILE_NAME, DuckDbDatabase, DuckDbMetaStore } from '@svc/storage';
import { TenantService } from '@svc/tenancy';
import { generateDashboardData } from './dashboard-data';
import { measurePurge, type PurgeResult } from './erasure-purge';
import { base62, metric } from './ingest';
import { cpuSeconds, ROOT, startService, tempFolder, type Child } from './processes';
import { fmt, type BenchTable, type Row } from './report';

const runFile = promisify(execFile);

export const TARGET_EVENTS_PER_SECOND = 300_000;
export const TARGET_PEAK_RSS_MIB = 300;
export const TARGET_DELETION_MS = 1_000;
export const DEFAULT_EXPORT_EVENTS = 10_000_000;
/** SVC_DB_MEMORY_LIMIT of the second service run: the database cache held small. */
const LIMITED_DATABASE_MEMORY = '128MB';

export interface ExportOptions {
  /** Events generated into the fresh database. */
  events: number;
  /** Users deleted one after the other. */
  deletions: number;
  log: (line: string) => void;
}

type Format = 'ndjson' | 'csv';

export interface StreamResult {
  format: Format;
  /** The SVC_DB_MEMORY_LIMIT the service ran with, if any. */
  memoryLimit?: string;
  seconds: number;
  bytes: number;
  lines: number;
  /** Peak RSS of the service process during the export (VmHWM after a reset), MiB. */
  peakRssMiB: number;
  rssBeforeMiB: number;
  /** What DuckDB's buffer manager held at the end (svc_database_memory_bytes), MiB. */
  databaseMiB: number;
  cpuSeconds: number;
}

interface NativeResult {
  format: Format;
  /** The memory_limit DuckDB ran with, if any. */
  memoryLimit?: string;
  seconds: number;
  bytes: number;
  /** Peak RSS of the process that ran the COPY (Node and DuckDB only), MiB. */
  peakRssMiB: number;
}

export interface DeletionResult {
  userEvents: number;
  /** From the DELETE request to the job seen completed (polled every 10 ms), ms. */
  clientMs: number;
  /** completedAt − requestedAt of the job, ms. */
  jobMs: number;
  deleted: number;
  /** The job's address (/v1/deletions/…). */
  location: string;
}

const MiB = 2 ** 20;

/** Resident set high-water mark of a process, MiB (Linux). */
function peakRss(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

function currentRss(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

/** Starts a new high-water mark at the current RSS (writing 5 to clear_refs, Linux ≥ 4.0). */
function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

async function databaseMemoryMiB(server: Child): Promise<number> {
  const { body } = await request(`${server.url}/metrics`);
  const text = await body.text();
  return text.includes('svc_database_memory_bytes') ? metric(text, 'svc_database_memory_bytes') / MiB : NaN;
}

/**
 * The database's own export of the same rows in the same order and columns, to a file, in a
 * process of its own (Node and DuckDB only, one thread per query as the service runs it): the
 * floor the streamed export's speed and memory are compared with.
 */
async function nativeExport(databaseFile: string, folder: string, tenantSeq: number, format: Format, memoryLimit?: string): Promise<NativeResult> {
  const out = join(folder, `native.${format}`);
  const args = [join(ROOT, 'bench', 'native-export.mjs'), databaseFile, String(tenantSeq), format, out, ...(memoryLimit ? [memoryLimit] : [])];
  const { stdout } = await runFile(process.execPath, args, { cwd: ROOT, maxBuffer: 1 << 20 });
  rmSync(out, { force: true });
  return { format, memoryLimit, ...(JSON.parse(stdout) as { seconds: number; bytes: number; peakRssMiB: number }) };
}

export async function streamExport(server: Child, adminToken: string, format: Format, memoryLimit?: string): Promise<StreamResult> {
  const rssBeforeMiB = currentRss(server.pid);
  resetPeakRss(server.pid);
  const cpu0 = cpuSeconds(server.pid);
  const t0 = performance.now();
  const { statusCode, body } = await request(`${server.url}/v1/analytics/events?format=${format}`, {
    headers: { authorization: `Bearer ${adminToken}` },
  });
  if (statusCode !== 200) throw new Error(`export answered ${statusCode}: ${await body.text()}`);
  let bytes = 0;
  let lines = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  }
  const seconds = (performance.now() - t0) / 1000;
  return {
    format,
    memoryLimit,
    seconds,
    bytes,
    // CSV: the header is a line, and a quoted field may hold line feeds (not in the generated data).
    lines: format === 'csv' ? lines - 1 : lines,
    peakRssMiB: peakRss(server.pid),
    rssBeforeMiB,
    databaseMiB: await databaseMemoryMiB(server),
    cpuSeconds: cpuSeconds(server.pid) - cpu0,
  };
}

export async function deleteUser(server: Child, adminToken: string, userId: string, userEvents: number): Promise<DeletionResult> {
  const headers = { authorization: `Bearer ${adminToken}` };
  const t0 = performance.now();
  const started = await request(`${server.url}/v1/users/${encodeURIComponent(userId)}/events`, { method: 'DELETE', headers });
  if (started.statusCode !== 202) throw new Error(`deletion answered ${started.statusCode}: ${await started.body.text()}`);
  await started.body.dump();
  const location = String(started.headers.location);
  for (;;) {
    const { statusCode, body } = await request(`${server.url}${location}`, { headers });
    const job = (await body.json()) as { status: string; requestedAt: string; completedAt: string | null; deletedEvents: number | null; error?: string };
    if (statusCode !== 200) throw new Error(`deletion job answered ${statusCode}`);
    if (job.status === 'failed') throw new Error(`deletion failed: ${job.error}`);
    if (job.status === 'completed') {
      return {
        userEvents,
        clientMs: performance.now() - t0,
        jobMs: Date.parse(job.completedAt!) - Date.parse(job.requestedAt),
        deleted: job.deletedEvents ?? 0,
        location,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function remainingEvents(server: Child, adminToken: string, userId: string): Promise<number> {
  const { body } = await request(`${server.url}/v1/analytics/events?format=ndjson&userId=${encodeURIComponent(userId)}`, {
    headers: { authorization: `Bearer ${adminToken}` },
  });
  const text = await body.text();
  return text ? text.trimEnd().split('\n').length : 0;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

/**
 * The export benchmark: NDJSON and CSV streamed by the service over HTTP from `events`
 * generated events (events/s, MB/s, the service's peak RSS), next to DuckDB's own COPY of the
 * same rows in the same run; then the time to delete one user's events among them.
 */
export async function exportBenchmark(options: ExportOptions): Promise<BenchTable> {
  const log = options.log;
  const folder = tempFolder('svc-bench-export-');
  const loadBefore = loadavg()[0]!;
  try {
    const credentials = { apiKey: `svc_pk_${base62(32)}`, adminToken: `svc_sk_${base62(32)}` };
    const native: NativeResult[] = [];
    let events: number;
    let users: { userId: string; events: number }[];
    let fileMiB: number;
    let tenantSeq: number;
    const db = await DuckDbDatabase.open(folder.path);
    try {
      const tenants = new TenantService(new DuckDbMetaStore(db));
      const { tenant } = await tenants.createTenant({ id: 'bench', name: 'Export benchmark', ...credentials });
      tenantSeq = tenant.seq;
      log(`generating ${fmt.int(options.events)} events…`);
      const data = await generateDashboardData(db, tenant.seq, options.events, Date.now());
      events = data.events;
      await db.write((connection) => connection.run('CHECKPOINT'));
      fileMiB = statSync(db.path).size / MiB;
      // Users with a typical number of events, picked the same way on every run.
      users = (
        await db.query(
          // One more than the deletions: the last is deleted while the purge runs. Ids of the
          // greatest length only, so that no other id holds one (fan-14216 is in fan-142160) and
          // the byte search after the purge finds only the deleted users.
          `SELECT user_id, count(*) AS n FROM events
           WHERE tenant_seq = $1 AND user_id IS NOT NULL
             AND length(user_id) = (SELECT max(length(user_id)) FROM events WHERE tenant_seq = $1)
           GROUP BY user_id ORDER BY hash(user_id) LIMIT ${options.deletions + 1}`,
          [tenant.seq],
        )
      ).map((row) => ({ userId: String(row.user_id), events: Number(row.n) }));
    } finally {
      await db.close();
    }
    for (const [format, memoryLimit] of [['ndjson'], ['csv'], ['ndjson', LIMITED_DATABASE_MEMORY]] as const) {
      log(`native COPY (${format}${memoryLimit ? `, memory_limit ${memoryLimit}` : ''})…`);
      const result = await nativeExport(join(folder.path, DATABASE_FILE_NAME), folder.path, tenantSeq, format, memoryLimit);
      native.push(result);
      log(`  ${fmt.int(events / result.seconds)} rows/s, ${fmt.int(result.bytes / MiB)} MiB in ${result.seconds.toFixed(1)} s, peak RSS ${fmt.int(result.peakRssMiB)} MiB`);
    }

    log('starting the service on the generated data…');
    const server = await startService(folder.path, {}, 120_000);
    const streamed: StreamResult[] = [];
    const deletions: DeletionResult[] = [];
    let leftBehind = 0;
    try {
      for (const format of ['ndjson', 'csv'] as const) {
        log(`streamed export (${format})…`);
        const result = await streamExport(server, credentials.adminToken, format);
        streamed.push(result);
        log(
          `  ${fmt.int(result.lines / result.seconds)} events/s, ${(result.bytes / MiB / result.seconds).toFixed(0)} MiB/s, ` +
            `${fmt.int(result.lines)} lines, peak RSS ${fmt.int(result.peakRssMiB)} MiB (database ${fmt.int(result.databaseMiB)} MiB)`,
        );
      }
      for (const user of users.slice(0, options.deletions)) {
        const result = await deleteUser(server, credentials.adminToken, user.userId, user.events);
        deletions.push(result);
        leftBehind += await remainingEvents(server, credentials.adminToken, user.userId);
        log(`  deleted ${user.userId}: ${result.deleted} of ${user.events} events, ${fmt.int(result.clientMs)} ms (job ${fmt.int(result.jobMs)} ms)`);
      }
      if (server.exitCode() !== 'running') throw new Error(`the service exited during the run:\n${server.output()}`);
    } finally {
      await server.stop();
    }
    log(`the service again, with SVC_DB_MEMORY_LIMIT=${LIMITED_DATABASE_MEMORY}…`);
    const limited = await startService(folder.path, { SVC_DB_MEMORY_LIMIT: LIMITED_DATABASE_MEMORY }, 120_000);
    try {
      const result = await streamExport(limited, credentials.adminToken, 'ndjson', LIMITED_DATABASE_MEMORY);
      streamed.push(result);
      log(`  ${fmt.int(result.lines / result.seconds)} events/s, peak RSS ${fmt.int(result.peakRssMiB)} MiB (database ${fmt.int(result.databaseMiB)} MiB)`);
    } finally {
      await limited.stop();
    }
    log('the service again, with SVC_ERASURE_MAX_DELAY_S=0: the purge of the deletions above starts with it…');
    const purge: PurgeResult = await measurePurge(
      folder.path,
      credentials,
      deletions.map((d) => d.location),
      users.slice(0, options.deletions).map((u) => u.userId),
      users[options.deletions]!.userId,
    );
    log(
      `  purged in ${purge.seconds.toFixed(1)} s (${purge.cpuSeconds.toFixed(1)} s CPU), file ${fmt.int(purge.fileMiBBefore)} → ${fmt.int(purge.fileMiBAfter)} MiB, ` +
        `userIds in the file ${purge.hitsBefore} → ${purge.hitsAfter}, slowest ingest ${fmt.int(purge.ingestMaxMs)} ms, deletion during the purge ${fmt.int(purge.deletionDuringPurgeMs)} ms`,
    );

    const rows: Row[] = [];
    let runErrors = false;
    // The run with the memory limit comes after the deletions (and before the purge's extra one).
    const deletedTotal = deletions.reduce((sum, d) => sum + d.deleted, 0);
    const expectedLines = (result: StreamResult) => (result.memoryLimit ? events - deletedTotal : events);
    for (const result of streamed) {
      // The database's own COPY of the same format, with the same memory limit.
      const base = native.find((n) => n.format === result.format && n.memoryLimit === result.memoryLimit)!;
      const peakRow = (figure: string): Row => ({
        figure, value: fmt.int(result.peakRssMiB), baseline: fmt.int(base.peakRssMiB), ratio: fmt.ratio(result.peakRssMiB, base.peakRssMiB),
        target: `< ${TARGET_PEAK_RSS_MIB}`, verdict: result.peakRssMiB < TARGET_PEAK_RSS_MIB ? 'pass' : 'fail',
      });
      const name = `${result.format === 'csv' ? 'CSV' : 'NDJSON'}${result.memoryLimit ? ` (SVC_DB_MEMORY_LIMIT=${result.memoryLimit})` : ''}`;
      const rate = result.lines / result.seconds;
      const baseRate = events / base.seconds;
      if (result.memoryLimit) {
        rows.push(
          { figure: `${name} export, events/s`, value: fmt.int(rate), baseline: fmt.int(baseRate), ratio: fmt.ratio(rate, baseRate), target: '—', verdict: '—' },
          peakRow(`${name} export, service peak RSS during the export, MiB (baseline: the COPY's process, same memory_limit)`),
        );
        if (result.lines !== expectedLines(result)) runErrors = true;
        continue;
      }
      if (result.lines !== expectedLines(result)) runErrors = true;
      rows.push(
        { figure: `${name} export, events/s (streamed over HTTP; baseline: DuckDB COPY of the same rows to a file)`, value: fmt.int(rate), baseline: fmt.int(baseRate), ratio: fmt.ratio(rate, baseRate), target: `≥ ${fmt.int(TARGET_EVENTS_PER_SECOND)}`, verdict: rate >= TARGET_EVENTS_PER_SECOND ? 'pass' : 'fail' },
        { figure: `${name} export, MB/s`, value: (result.bytes / 1e6 / result.seconds).toFixed(0), baseline: (base.bytes / 1e6 / base.seconds).toFixed(0), ratio: fmt.ratio(result.bytes / result.seconds, base.bytes / base.seconds), target: '—', verdict: '—' },
        peakRow(`${name} export, service peak RSS during the export, MiB (baseline: peak RSS of a process running only the COPY)`),
        { figure: `${name} export, service RSS before it, and the database cache at its end, MiB`, value: `${fmt.int(result.rssBeforeMiB)} / ${fmt.int(result.databaseMiB)}`, baseline: '—', ratio: '—', target: '—', verdict: '—' },
        { figure: `${name} export, service CPU µs per event`, value: ((result.cpuSeconds / result.lines) * 1e6).toFixed(2), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      );
    }
    const deletionMs = deletions.map((d) => d.clientMs);
    const worst = Math.max(...deletionMs);
    rows.push(
      { figure: `Deletion of one user's events among ${fmt.int(events)}, request → job completed, median ms (${deletions.length} users)`, value: fmt.int(median(deletionMs)), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: `Deletion of one user's events among ${fmt.int(events)}, request → job completed, max ms`, value: fmt.int(worst), baseline: '—', ratio: '—', target: `< ${fmt.int(TARGET_DELETION_MS)}`, verdict: worst < TARGET_DELETION_MS ? 'pass' : 'fail' },
    );
    rows.push(
      { figure: `Purge of the erased users' bytes from the files (rewrite of the database file, ${fmt.int(events)} events), s from the service's start`, value: purge.seconds.toFixed(1), baseline: '—', ratio: '—', target: '≤ SVC_ERASURE_MAX_DELAY_S', verdict: '—' },
      { figure: 'Purge: service CPU s; database file before → after, MiB', value: `${purge.cpuSeconds.toFixed(1)}; ${fmt.int(purge.fileMiBBefore)} → ${fmt.int(purge.fileMiBAfter)}`, baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: 'Purge: slowest single-event ingest while it ran, ms (commits wait for the copy)', value: fmt.int(purge.ingestMaxMs), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: 'Purge: a deletion requested while it ran, request → job completed, ms', value: fmt.int(purge.deletionDuringPurgeMs), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: "Purge: copies of the deleted userIds in the database file, before → after (clean shutdown)", value: `${purge.hitsBefore} → ${purge.hitsAfter}`, baseline: '—', ratio: '—', target: '→ 0', verdict: purge.hitsAfter === 0 ? 'pass' : 'fail' },
    );
    const wrongDeletes = deletions.filter((d) => d.deleted !== d.userEvents).length;
    if (wrongDeletes || leftBehind || purge.hitsAfter > 0) runErrors = true;
    rows.push({
      figure: 'Errors: exports missing or adding events, deletions leaving events or deleting others',
      value: String(streamed.filter((s) => s.lines !== expectedLines(s)).length + wrongDeletes + leftBehind),
      baseline: '0',
      ratio: '—',
      target: '0',
      verdict: runErrors ? 'fail' : 'pass',
    });

    const sample = createHash('sha256').update(users.map((u) => u.userId).join(',')).digest('hex').slice(0, 8);
    return {
      title: 'Raw export and deletion',
      rows,
      notes: [
        `Data: ${fmt.int(events)} events of one tenant (bench/dashboard-data.ts), DuckDB file ${fmt.int(fileMiB)} MiB after CHECKPOINT. ` +
          'The service is started fresh on that file; each export is one GET /v1/analytics/events over HTTP, read to the end by undici; ' +
          'peak RSS is the service process\'s VmHWM, reset before each export.',
        `Baseline: DuckDB's COPY (SELECT … ORDER BY ts, event_id) TO a file, CSV with header and JSON lines, each in a process of its own (Node and DuckDB only, one thread per query) before the service starts: ` +
          native.map((n) => `${n.format}${n.memoryLimit ? ` (memory_limit ${n.memoryLimit})` : ''} ${fmt.int(n.bytes / MiB)} MiB in ${n.seconds.toFixed(1)} s, peak RSS ${fmt.int(n.peakRssMiB)} MiB`).join('; ') + '.',
        `Deletions: ${deletions.map((d) => `${d.deleted} events in ${fmt.int(d.clientMs)} ms (job ${fmt.int(d.jobMs)})`).join('; ')} (users ${sample}…); ` +
          `afterwards an export filtered by each user found ${leftBehind} events.`,
        `Load average before the run: ${loadBefore.toFixed(1)}.`,
      ],
      runErrors,
    };
  } finally {
    folder.remove();
  }
}
