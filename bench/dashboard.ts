import { statSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { DuckDBValue } from '@duckdb/node-api';
import { request } from 'undici';
import { uuidv7 } from 'uuidv7';
import { AnalyticsService, DEFAULT_RANGE_MS, type OverviewFilter } from '@svc/analytics';
import { DuckDbAnalyticsStore, DuckDbDatabase, DuckDbMetaStore, type AnalyticsFilter, type AnalyticsStore, type Tenant } from '@svc/storage';
import { TenantService } from '@svc/tenancy';
import { generateDashboardData, type GeneratedData } from './dashboard-data';
import { base62 } from './ingest';
import { percentile } from './load';
import { startService, tempFolder, type Child } from './processes';
import { fmt, type BenchTable, type Row } from './report';

/** The issue's targets: p95 of the whole overview, and how soon a live dashboard shows a new event. */
export const TARGET_UNFILTERED_P95_MS = 500;
export const TARGET_BROADCAST_P95_MS = 100;
export const TARGET_LIVE_MS = 1_000;
export const DEFAULT_DASHBOARD_EVENTS = 10_000_000;

export interface DashboardOptions {
  /** Events generated into the fresh database. */
  events: number;
  /** Timed overviews per view (the 30-day view, which is slow, gets half as many). */
  runs: number;
  /** Live probes per live stream (the unfiltered stream gets half as many). */
  probes: number;
  log: (line: string) => void;
}

/** Runs of the plain scan per view (the median is the baseline). */
const SCAN_RUNS = 7;
/** Runs of each panel on its own per view (the median is shown). */
const PANEL_RUNS = 3;
/** Background traffic while probing a live stream: a batch every BACKGROUND_MS. */
const BACKGROUND_EVENTS = 10;
const BACKGROUND_MS = 100;
const PROBE_TIMEOUT_MS = 60_000;
/** The live stream's tick (LIVE_TICK_MS in packages/analytics/src/live-overview-feed.ts). */
const LIVE_TICK_MS = 250;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sorted = (values: number[]) => Float64Array.from(values).sort();
const median = (values: number[]) => percentile(sorted(values), 50);

/** One dashboard view measured in process: the filter passed to the service, and the same rows for the scan. */
interface View {
  key: string;
  label: string;
  /** What the dashboard sends (no dates = the default range, the last 7 days ending now). */
  filter: OverviewFilter;
  runs: number;
  target?: number;
}

interface ViewResult {
  view: View;
  overviewMs: number[];
  scanMs: number[];
  /** Median ms of each AnalyticsStore method alone, in PANELS order. */
  panelMs: number[];
  /** Rows the plain scan counted (the rows the overview looks at). */
  rows: number;
  summary: string;
}

const PANELS: { name: string; run: (store: AnalyticsStore, filter: AnalyticsFilter) => Promise<unknown> }[] = [
  { name: 'viewerSeries (viewers over time, peak, unique viewers, sessions)', run: (s, f) => s.viewerSeries(f) },
  { name: 'engagement (joined vs engaged viewers)', run: (s, f) => s.engagement(f) },
  { name: 'pollResults (first vote per viewer per poll)', run: (s, f) => s.pollResults(f) },
  { name: 'sponsorPerformance (impressions, taps, conversions, revenue)', run: (s, f) => s.sponsorPerformance(f) },
  { name: 'revenue (orders counted once, items)', run: (s, f) => s.revenue(f) },
  { name: 'funnel (viewed → cart → started → completed)', run: (s, f) => s.funnel(f) },
];

/** The same WHERE as the panels' `base` CTE, for the plain scan. */
function scanSql(filter: AnalyticsFilter, values: DuckDBValue[]): string {
  const param = (value: DuckDBValue) => {
    values.push(value);
    return `$${values.length}`;
  };
  const clauses = [`tenant_seq = ${param(filter.tenantSeq)}`];
  if (filter.broadcastId !== undefined) clauses.push(`broadcast_id = ${param(filter.broadcastId)}`);
  if (filter.fromMs !== undefined) clauses.push(`ts >= epoch_ms(${param(filter.fromMs)}::BIGINT)`);
  if (filter.toMs !== undefined) clauses.push(`ts < epoch_ms(${param(filter.toMs)}::BIGINT)`);
  return `SELECT count(*) AS n, sum(total) AS total, count(DISTINCT session_id) AS sessions FROM events WHERE ${clauses.join(' AND ')}`;
}

async function timed<T>(job: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const result = await job();
  return [performance.now() - t0, result];
}

/** The dates the service would use for this view now. */
function resolved(tenant: Tenant, filter: OverviewFilter): AnalyticsFilter {
  const toMs = filter.toMs ?? Date.now();
  return { ...filter, tenantSeq: tenant.seq, toMs, fromMs: filter.fromMs ?? toMs - DEFAULT_RANGE_MS };
}

async function measureView(db: DuckDbDatabase, store: AnalyticsStore, service: AnalyticsService, tenant: Tenant, view: View, log: (line: string) => void): Promise<ViewResult> {
  const scan = async () => {
    const values: DuckDBValue[] = [];
    const sql = scanSql(resolved(tenant, view.filter), values);
    return timed(() => db.query(sql, values));
  };
  // Warm-up, not counted: one overview and one scan.
  const [, first] = await timed(() => service.overview(tenant, view.filter));
  const [, [firstScan]] = await scan();
  const scanMs: number[] = [];
  for (let i = 0; i < SCAN_RUNS; i++) scanMs.push((await scan())[0]);
  const overviewMs: number[] = [];
  for (let i = 0; i < view.runs; i++) overviewMs.push((await timed(() => service.overview(tenant, view.filter)))[0]);
  log(
    `  ${view.key}: overview p50 ${fmt.ms(percentile(sorted(overviewMs), 50))} ms, p95 ${fmt.ms(percentile(sorted(overviewMs), 95))} ms over ${view.runs} runs; ` +
      `plain scan median ${fmt.ms(median(scanMs))} ms over ${fmt.int(Number(firstScan?.n))} rows`,
  );
  const panelMs: number[] = [];
  for (const panel of PANELS) {
    const runs: number[] = [];
    for (let i = 0; i < PANEL_RUNS; i++) runs.push((await timed(() => panel.run(store, resolved(tenant, view.filter))))[0]);
    panelMs.push(median(runs));
  }
  log(`  ${view.key}: panels alone (median of ${PANEL_RUNS}) ${panelMs.map((ms) => fmt.ms(ms)).join(', ')} ms`);
  const f = first.funnel;
  const summary =
    `${fmt.int(first.viewers.sessions)} sessions, ${fmt.int(first.viewers.uniqueViewers)} unique viewers, ${first.viewers.series.length} series points (peak ${fmt.int(first.viewers.peak)}); ` +
    `engagement ${fmt.int(first.engagement.engagedViewers)} of ${fmt.int(first.engagement.joinedViewers)}; ${first.polls.length} polls with ${fmt.int(first.polls.reduce((s, p) => s + p.totalVotes, 0))} counted votes; ` +
    `${first.sponsors.length} sponsor × broadcast rows; ${first.revenue.map((r) => `${fmt.int(r.orders)} orders ${r.currency} ${fmt.int(r.gross)}`).join(', ')}; ` +
    `funnel ${f.map((s) => fmt.int(s.sessions)).join(' → ')}`;
  return { view, overviewMs, scanMs, panelMs, rows: Number(firstScan?.n), summary };
}

/** A `GET /v1/analytics/live` stream: remembers when each `overview` arrived and which polls it held. */
class LiveStream {
  private buffer = '';
  private readonly waiters: { pollId: string; resolve: (at: number) => void }[] = [];
  readonly controller = new AbortController();
  overviews = 0;
  private done: Promise<void> = Promise.resolve();

  static async open(origin: string, adminToken: string, query: string): Promise<LiveStream> {
    const stream = new LiveStream();
    const response = await request(`${origin}/v1/analytics/live${query}`, {
      headers: { authorization: `Bearer ${adminToken}`, accept: 'text/event-stream' },
      signal: stream.controller.signal,
      bodyTimeout: 0,
    });
    if (response.statusCode !== 200) throw new Error(`GET /v1/analytics/live${query} answered ${response.statusCode}: ${await response.body.text()}`);
    stream.done = (async () => {
      try {
        for await (const chunk of response.body) stream.receive(String(chunk));
      } catch {
        // Aborted at the end.
      }
    })();
    return stream;
  }

  private receive(text: string): void {
    const at = performance.now();
    this.buffer += text;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const event = /^event: (.+)$/m.exec(block)?.[1];
      const data = /^data: (.+)$/m.exec(block)?.[1];
      if (event !== 'overview' || !data) continue;
      this.overviews++;
      const polls = new Set((JSON.parse(data) as { polls: { pollId: string }[] }).polls.map((p) => p.pollId));
      for (let i = this.waiters.length - 1; i >= 0; i--) {
        if (polls.has(this.waiters[i]!.pollId)) this.waiters.splice(i, 1)[0]!.resolve(at);
      }
    }
  }

  /** When an overview holding this poll arrives. */
  seen(pollId: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no overview with poll ${pollId} within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
      this.waiters.push({ pollId, resolve: (at) => (clearTimeout(timer), resolve(at)) });
    });
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}

interface ProbeSet {
  label: string;
  /** POST sent → overview with the event received, ms. */
  latencies: number[];
  /** POST answered (event committed) → overview received, ms. */
  afterAck: number[];
  overviews: number;
  seconds: number;
}

async function postEvents(origin: string, apiKey: string, events: object[]): Promise<void> {
  const response = await request(`${origin}/v1/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-api-key': apiKey },
    body: JSON.stringify({ sentAt: new Date().toISOString(), events }),
  });
  const text = await response.body.text();
  const answer = JSON.parse(text) as { accepted?: number };
  if (response.statusCode !== 200 || answer.accepted !== events.length) throw new Error(`POST /v1/events answered ${response.statusCode}: ${text}`);
}

/** A poll overlay of the broadcast for one probe (options Yes and No); returns its id. */
async function createProbePoll(origin: string, adminToken: string, broadcastId: string): Promise<string> {
  const response = await request(`${origin}/v1/broadcasts/${encodeURIComponent(broadcastId)}/overlays`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({ type: 'poll', question: 'Live probe', options: ['Yes', 'No'] }),
  });
  const text = await response.body.text();
  if (response.statusCode !== 201) throw new Error(`creating the probe's poll answered ${response.statusCode}: ${text}`);
  return (JSON.parse(text) as { id: string }).id;
}

const vote = (broadcastId: string, sessionId: string, pollId: string) => ({
  event: 'poll.voted',
  eventId: uuidv7(),
  sessionId,
  broadcastId,
  timestamp: new Date().toISOString(),
  data: { pollId, questionText: 'Live probe', optionSelected: 'Yes', optionIndex: 0 },
});

/**
 * Probes one live stream: posts one poll.voted for a fresh poll, waits for the overview that
 * shows it, waits a random 0–1 s (so probes land at any point of the 250 ms tick), repeats.
 * With `background`, another client posts BACKGROUND_EVENTS poll.viewed to the broadcast every
 * BACKGROUND_MS meanwhile, so the stream is always dirty, as during a live broadcast.
 */
async function probeStream(
  server: Child,
  credentials: { apiKey: string; adminToken: string },
  label: string,
  query: string,
  broadcastId: string,
  probes: number,
  background: boolean,
  log: (line: string) => void,
): Promise<ProbeSet> {
  const stream = await LiveStream.open(server.url, credentials.adminToken, query);
  /** The background client: settles to its error, or null. */
  let traffic: Promise<unknown> = Promise.resolve(null);
  let stopTraffic = false;
  let result: ProbeSet;
  try {
    // The first overview comes at once; let the stream settle.
    await sleep(1_000);
    while (stream.overviews === 0) await sleep(100);
    if (background) {
      traffic = (async () => {
        for (let n = 0; !stopTraffic; n++) {
          const events = Array.from({ length: BACKGROUND_EVENTS }, (_, i) => ({
            event: 'poll.viewed',
            eventId: uuidv7(),
            sessionId: `svc_livebg${n % 500}_${i}`,
            broadcastId,
            timestamp: new Date().toISOString(),
            data: { pollId: `${broadcastId}-poll-0`, questionText: 'Who wins tonight?' },
          }));
          await postEvents(server.url, credentials.apiKey, events);
          await sleep(BACKGROUND_MS);
        }
        return null;
        // Settles to the error, if any, which is thrown once the probes are done.
      })().catch((error: unknown) => error);
      await sleep(1_000);
    }
    const overviews0 = stream.overviews;
    const t0 = performance.now();
    const latencies: number[] = [];
    const afterAck: number[] = [];
    for (let i = 0; i < probes; i++) {
      // A poll of the service (votes on a poll it does not know are stored but never counted), created before the clock starts.
      const pollId = await createProbePoll(server.url, credentials.adminToken, broadcastId);
      const seen = stream.seen(pollId);
      seen.catch(() => undefined);
      const sent = performance.now();
      await postEvents(server.url, credentials.apiKey, [vote(broadcastId, `svc_liveprobe${base62(12)}`, pollId)]);
      const acked = performance.now();
      const at = await seen;
      latencies.push(at - sent);
      afterAck.push(at - acked);
      await sleep(Math.random() * 1_000);
    }
    result = { label, latencies, afterAck, overviews: stream.overviews - overviews0, seconds: (performance.now() - t0) / 1000 };
  } finally {
    stopTraffic = true;
    await traffic;
    await stream.close();
  }
  const trafficError = await traffic;
  if (trafficError) throw trafficError;
  log(`  ${label}: POST → overview ${result.latencies.map((ms) => fmt.int(ms)).join(', ')} ms; ${result.overviews} overviews sent in ${result.seconds.toFixed(1)} s`);
  return result;
}

async function liveProbes(dataDir: string, credentials: { apiKey: string; adminToken: string }, broadcastId: string, probes: number, log: (line: string) => void): Promise<ProbeSet[]> {
  log('live: starting the service on the generated data…');
  const server = await startService(dataDir, {}, 120_000);
  try {
    const sets = [
      await probeStream(server, credentials, 'one broadcast, quiet', `?broadcastId=${broadcastId}`, broadcastId, probes, false, log),
      await probeStream(server, credentials, 'one broadcast, with traffic', `?broadcastId=${broadcastId}`, broadcastId, probes, true, log),
      await probeStream(server, credentials, 'no filter (last 7 days), with traffic', '', broadcastId, Math.max(1, Math.ceil(probes / 2)), true, log),
    ];
    if (server.exitCode() !== 'running') throw new Error(`the service exited during the run:\n${server.output()}`);
    return sets;
  } finally {
    await server.stop();
  }
}

/**
 * The dashboard benchmark: the whole overview (AnalyticsService.overview, all six panels) on
 * `events` generated events, unfiltered and for one broadcast, against one plain scan of the
 * same rows in the same database; each panel alone; and live update latency through the real
 * service's `GET /v1/analytics/live` on the same data.
 */
export async function dashboardBenchmark(options: DashboardOptions): Promise<BenchTable> {
  const log = options.log;
  const folder = tempFolder('svc-bench-dashboard-');
  const loadBefore = loadavg()[0]!;
  try {
    const credentials = { apiKey: `svc_pk_${base62(32)}`, adminToken: `svc_sk_${base62(32)}` };
    const db = await DuckDbDatabase.open(folder.path);
    let data: GeneratedData;
    let generateSeconds: number;
    let fileMiB: number;
    const results: ViewResult[] = [];
    try {
      const tenants = new TenantService(new DuckDbMetaStore(db));
      const { tenant } = await tenants.createTenant({ id: 'bench', name: 'Dashboard benchmark', ...credentials });
      log(`generating ${fmt.int(options.events)} events…`);
      const t0 = performance.now();
      data = await generateDashboardData(db, tenant.seq, options.events, Date.now());
      generateSeconds = (performance.now() - t0) / 1000;
      fileMiB = statSync(db.path).size / 2 ** 20;
      log(`  ${fmt.int(data.events)} events in ${fmt.int(data.sessions)} sessions in ${generateSeconds.toFixed(1)} s; database file ${fmt.int(fileMiB)} MiB`);

      // What openEmbeddedStorage builds, over a handle we keep for the plain scan.
      const store = new DuckDbAnalyticsStore(db);
      const service = new AnalyticsService(store);
      const views: View[] = [
        {
          key: 'all 30 days',
          label: 'whole overview, no filter, all 30 days',
          filter: { fromMs: data.fromMs, toMs: data.toMs },
          runs: Math.max(1, Math.ceil(options.runs / 2)),
          target: TARGET_UNFILTERED_P95_MS,
        },
        { key: 'last 7 days', label: 'whole overview, no filter, default range (last 7 days)', filter: {}, runs: options.runs, target: TARGET_UNFILTERED_P95_MS },
        {
          key: 'one broadcast',
          label: `whole overview, one broadcast (${data.latestBroadcastId}), all 30 days`,
          filter: { broadcastId: data.latestBroadcastId, fromMs: data.fromMs, toMs: data.toMs },
          runs: options.runs,
          target: TARGET_BROADCAST_P95_MS,
        },
      ];
      for (const view of views) {
        log(`${view.key}: ${view.runs} overviews…`);
        results.push(await measureView(db, store, service, tenant, view, log));
      }
    } finally {
      await db.close();
    }

    const probes = await liveProbes(folder.path, credentials, data.latestBroadcastId, options.probes, log);

    const rows: Row[] = [];
    for (const r of results) {
      const scan = median(r.scanMs);
      const p50 = percentile(sorted(r.overviewMs), 50);
      const p95 = percentile(sorted(r.overviewMs), 95);
      const scope = `${r.view.label}, ${fmt.int(r.rows)} rows`;
      rows.push({ figure: `${scope}: p50 ms (${r.view.runs} runs)`, value: fmt.ms(p50), baseline: fmt.ms(scan), ratio: fmt.ratio(p50, scan), target: '—', verdict: '—' });
      rows.push({
        figure: `${scope}: p95 ms (${r.view.runs} runs)`,
        value: fmt.ms(p95),
        baseline: fmt.ms(scan),
        ratio: fmt.ratio(p95, scan),
        target: r.view.target === undefined ? '—' : `< ${fmt.int(r.view.target)}`,
        verdict: r.view.target === undefined ? '—' : p95 < r.view.target ? 'pass' : 'fail',
      });
    }
    for (const set of probes) {
      const all = sorted(set.latencies);
      rows.push({ figure: `live update, ${set.label}: POST → overview with the event, p50 ms (${set.latencies.length} probes)`, value: fmt.ms(percentile(all, 50)), baseline: '—', ratio: '—', target: '—', verdict: '—' });
      const max = percentile(all, 100);
      rows.push({
        figure: `live update, ${set.label}: POST → overview with the event, max ms (${set.latencies.length} probes)`,
        value: fmt.ms(max),
        baseline: '—',
        ratio: '—',
        target: `< ${fmt.int(TARGET_LIVE_MS)}`,
        verdict: max < TARGET_LIVE_MS ? 'pass' : 'fail',
      });
    }

    const notes = [
      `Data: ${fmt.int(data.events)} events of one tenant in ${fmt.int(data.sessions)} sessions, generated in SQL in ${generateSeconds.toFixed(0)} s (bench/dashboard-data.ts: ` +
        `200 broadcasts over 30 days in 4 campaigns, 12 countries, sessions of 10–40 events, polls, sponsor moments, shopping funnel, 1 in 10 orders reported twice); DuckDB file ${fmt.int(fileMiB)} MiB after CHECKPOINT.`,
      ...results.map((r) => `${r.view.key}: ${r.summary}.`),
      `Overview: AnalyticsService.overview(tenant, filter) in the benchmark process over DuckDbAnalyticsStore on a fresh DuckDbDatabase (what openEmbeddedStorage builds), one overview at a time, after one warm-up overview. ` +
        `Baseline: one plain scan of the same rows in the same database on the same read connection, \`SELECT count(*), sum(total), count(DISTINCT session_id) FROM events WHERE <the panels' filter>\`, median of ${SCAN_RUNS}.`,
      `All runs, ms — ${results.map((r) => `${r.view.key}: ${r.overviewMs.map((ms) => fmt.ms(ms)).join(', ')}`).join('; ')}.`,
      `Live: node apps/server/bin/svc.js serve on the same data folder; GET /v1/analytics/live (Server-Sent Events, the dashboard's live mode; computes the overview again from the rollups within a ${LIVE_TICK_MS} ms tick of any stored event, or as soon as the one in progress is sent); ` +
        `a probe is one POST /v1/events with a poll.voted for a fresh poll, timed until an \`overview\` holding that poll arrives. "With traffic": meanwhile another client posts ${BACKGROUND_EVENTS} events to the broadcast every ${BACKGROUND_MS} ms, so the stream recomputes back to back, as during a live broadcast. ` +
        probes
          .map((s) => `${s.label}: ${s.latencies.map((ms) => fmt.int(ms)).join(', ')} ms (after the POST was answered: ${s.afterAck.map((ms) => fmt.int(ms)).join(', ')}); ${s.overviews} overviews in ${s.seconds.toFixed(1)} s`)
          .join('; ') +
        '.',
    ];
    notes.push(`Load average (1 min) of the machine: ${loadBefore.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end; DuckDB uses its default of one thread per core.`);
    const broadcast = results.find((r) => r.view.key === 'one broadcast');
    if (broadcast) {
      notes.push(
        `In-process estimate of the live cost for one broadcast: up to one ${LIVE_TICK_MS} ms tick + one overview (p50 ${fmt.ms(percentile(sorted(broadcast.overviewMs), 50))} ms) ≈ ${fmt.int(LIVE_TICK_MS + percentile(sorted(broadcast.overviewMs), 50))} ms at worst when the stream is idle; ` +
          `while an overview is already running the new event also waits for it to finish.`,
      );
    }

    return {
      title: `Dashboard: overview latency on ${fmt.int(data.events)} events, plain scan baseline, live updates`,
      rows,
      notes,
      runErrors: false,
      extra: [
        {
          title: `Each panel alone (AnalyticsStore method, median of ${PANEL_RUNS} runs, ms); the overview runs them side by side on four read connections`,
          header: ['panel', ...results.map((r) => r.view.key)],
          rows: [
            ...PANELS.map((panel, i) => [panel.name, ...results.map((r) => fmt.ms(r.panelMs[i]!))]),
            ['sum of the six', ...results.map((r) => fmt.ms(r.panelMs.reduce((s, ms) => s + ms, 0)))],
            ['whole overview p50', ...results.map((r) => fmt.ms(percentile(sorted(r.overviewMs), 50)))],
            ['plain scan of the same rows (median)', ...results.map((r) => fmt.ms(median(r.scanMs)))],
          ],
        },
      ],
    };
  } finally {
    folder.remove();
  }
}
