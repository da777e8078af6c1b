/**
 * `npm run soak -- --minutes N [--viewers 200] [--sample-seconds 15]`: runs the service for N
 * minutes under mixed traffic and reports its memory and latency over time.
 *
 * Traffic: virtual viewers over WebSocket joining and leaving all the time (a tenth of them
 * replaced every 5 s), a poll shown and hidden every 20 s (viewers vote), purchases and other
 * events over HTTP every second, a dashboard overview every 10 s, an NDJSON export every 30 s,
 * and every stored event forwarded to a local webhook receiver.
 *
 * At the end: one row per sample (server RSS and heap, POST /v1/events latency, events stored,
 * webhook deliveries), the memory trend (least-squares slope of RSS over the second half of the
 * run, and the mean RSS of the last third against the middle third), and a check that every
 * accepted event was stored and delivered.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { VirtualViewer } from '@svc/simulator';
import { base62, metric } from './ingest';
import { makeBody, EVENTS_PER_BATCH } from './events';
import { percentile } from './load';
import { startService, tempFolder } from './processes';
import { machineInfo, machineLine } from './report';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    viewers: { type: 'string', default: '200' },
    'sample-seconds': { type: 'string', default: '15' },
  },
});
const MINUTES = Number(args.minutes);
const VIEWERS = Number(args.viewers);
const SAMPLE_MS = Number(args['sample-seconds']) * 1000;
const BROADCAST = 'soak-live';
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Sample {
  atS: number;
  rssMiB: number;
  heapMiB: number;
  databaseMiB: number;
  postP50: number;
  postP99: number;
  overviewMs: number;
  stored: number;
  delivered: number;
  viewers: number;
}

async function main(): Promise<void> {
  const folder = tempFolder('svc-soak-');
  const apiKey = `svc_pk_${base62(32)}`;
  const adminToken = `svc_sk_${base62(32)}`;
  let delivered = 0;
  const deliveredIds = new Set<string>();
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      if (id && !deliveredIds.has(id)) {
        deliveredIds.add(id);
        delivered++;
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  const receiverPort = (receiver.address() as { port: number }).port;

  const service = await startService(folder.path, { SVC_BOOTSTRAP_API_KEY: apiKey, SVC_BOOTSTRAP_ADMIN_TOKEN: adminToken, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' });
  const admin = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = admin) => {
    const { 'content-type': _json, ...bare } = headers;
    const response = await request(service.url + path, { method, headers: body === undefined ? bare : headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.body.text();
    if (response.statusCode >= 400) throw new Error(`${method} ${path}: ${response.statusCode} ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
  await call('POST', '/v1/broadcasts', { id: BROADCAST, campaignId: 1 });
  await call('POST', '/v1/webhooks', { url: `http://127.0.0.1:${receiverPort}/hook` });

  let accepted = 0;
  let failures = 0;
  let postLatencies: number[] = [];
  let lastOverviewMs = Number.NaN;
  const viewers = new Set<VirtualViewer>();
  const wsBase = service.url.replace(/^http/, 'ws');
  const join = () => {
    const viewer = new VirtualViewer({ webSocketBaseURL: wsBase, apiKey, broadcastId: BROADCAST, userId: Math.random() < 0.6 ? `soak-${base62(8)}` : null, activity: 0.5, random: Math.random });
    viewers.add(viewer);
    viewer.join().catch(() => {
      failures++;
      viewers.delete(viewer);
    });
  };
  let leftEvents = 0;
  const leave = (viewer: VirtualViewer) => {
    viewer.leave();
    leftEvents += viewer.stats.events;
    viewers.delete(viewer);
  };

  const timers: NodeJS.Timeout[] = [];
  const every = (ms: number, job: () => Promise<void> | void) => {
    timers.push(setInterval(() => void Promise.resolve(job()).catch((error: Error) => {
      failures++;
      log(`error: ${error.message}`);
    }), ms));
  };
  for (let i = 0; i < VIEWERS; i++) join();
  every(5_000, () => {
    const churn = Math.ceil(viewers.size / 10);
    [...viewers].slice(0, churn).forEach(leave);
    for (let i = 0; i < churn; i++) join();
  });
  every(20_000, async () => {
    const poll = await call('POST', `/v1/broadcasts/${BROADCAST}/overlays`, { type: 'poll', question: 'Who wins?', options: ['Home', 'Away', 'Draw'] });
    await call('POST', `/v1/broadcasts/${BROADCAST}/overlays/${String(poll.id)}/show`);
    setTimeout(() => void call('POST', `/v1/broadcasts/${BROADCAST}/overlays/${String(poll.id)}/hide`).catch(() => failures++), 10_000);
  });
  every(1_000, async () => {
    const started = performance.now();
    const answer = await call('POST', '/v1/events', JSON.parse(makeBody().toString()), { 'x-svc-api-key': apiKey, 'content-type': 'application/json' });
    postLatencies.push(performance.now() - started);
    accepted += Number(answer.accepted ?? 0);
    if (Number(answer.accepted) !== EVENTS_PER_BATCH) failures++;
  });
  every(10_000, async () => {
    const started = performance.now();
    await call('GET', '/v1/analytics/overview');
    lastOverviewMs = performance.now() - started;
  });
  every(30_000, async () => {
    const response = await request(`${service.url}/v1/analytics/events?format=ndjson`, { headers: admin });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`export: ${response.statusCode}`);
  });

  const samples: Sample[] = [];
  const started = Date.now();
  const sample = async () => {
    const metrics = await (await request(`${service.url}/metrics`)).body.text();
    const heap = metric(metrics, 'svc_nodejs_heap_size_used_bytes');
    const rss = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${service.pid}/status`, 'utf8'))?.[1];
    const sorted = Float64Array.from(postLatencies).sort();
    postLatencies = [];
    const s: Sample = {
      atS: Math.round((Date.now() - started) / 1000),
      rssMiB: Number(rss) / 1024,
      heapMiB: Number(heap) / 2 ** 20,
      databaseMiB: metric(metrics, 'svc_database_memory_bytes') / 2 ** 20,
      postP50: percentile(sorted, 50),
      postP99: percentile(sorted, 99),
      overviewMs: lastOverviewMs,
      stored: metric(metrics, 'svc_events_accepted_total'),
      delivered,
      viewers: viewers.size,
    };
    samples.push(s);
    log(`${s.atS} s: RSS ${s.rssMiB.toFixed(1)} MiB, heap ${s.heapMiB.toFixed(1)} MiB, database ${s.databaseMiB.toFixed(1)} MiB, POST p50 ${s.postP50.toFixed(1)} ms, ${s.viewers} viewers, ${s.delivered} delivered`);
  };
  const sampler = setInterval(() => void sample().catch((error: Error) => log(`sample failed: ${error.message}`)), SAMPLE_MS);
  await new Promise((resolve) => setTimeout(resolve, MINUTES * 60_000));
  clearInterval(sampler);
  for (const timer of timers) clearInterval(timer);
  for (const viewer of [...viewers]) leave(viewer);

  // Let the last events commit and the webhook catch up, then compare.
  const viewerEvents = leftEvents;
  const deadline = Date.now() + 60_000;
  let stored = 0;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const exported = await request(`${service.url}/v1/analytics/events?format=ndjson`, { headers: admin });
    await exported.body.dump();
    stored = Number(exported.headers['x-total-count']);
    if (delivered >= stored && stored >= accepted) break;
  }
  await service.stop();
  receiver.close();
  folder.remove();
  print(samples, { accepted, viewerEvents, stored, delivered, failures });
}

function slopePerMinute(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den ? (num / den) * 60 : 0;
}

function print(samples: Sample[], totals: { accepted: number; viewerEvents: number; stored: number; delivered: number; failures: number }): void {
  const f = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
  const lines = [
    `Soak: ${MINUTES} min, ${VIEWERS} viewers churning, on ${machineLine(machineInfo())}`,
    '',
    '| time s | RSS MiB | heap MiB | database MiB | RSS − database MiB | POST /v1/events p50 ms | p99 ms | overview ms | events stored | webhook deliveries | viewers |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...samples.map((s) => `| ${s.atS} | ${f(s.rssMiB)} | ${f(s.heapMiB)} | ${f(s.databaseMiB)} | ${f(s.rssMiB - s.databaseMiB)} | ${f(s.postP50)} | ${f(s.postP99)} | ${f(s.overviewMs)} | ${s.stored} | ${s.delivered} | ${s.viewers} |`),
  ];
  // The database keeps a cache of its file that grows with the data (up to its memory limit):
  // that is not a leak, so the trend is judged on the process without it and on the JS heap.
  const half = samples.slice(Math.floor(samples.length / 2));
  const third = Math.floor(samples.length / 3);
  const own = (s: Sample) => s.rssMiB - s.databaseMiB;
  const mean = (xs: Sample[]) => xs.reduce((sum, x) => sum + own(x), 0) / Math.max(1, xs.length);
  const middle = samples.slice(third, 2 * third);
  const last = samples.slice(2 * third);
  const ownSlope = slopePerMinute(half.map((s) => [s.atS, own(s)]));
  const heapSlope = slopePerMinute(half.map((s) => [s.atS, s.heapMiB]));
  const rssSlope = slopePerMinute(half.map((s) => [s.atS, s.rssMiB]));
  const databaseSlope = slopePerMinute(half.map((s) => [s.atS, s.databaseMiB]));
  const growth = mean(middle) ? mean(last) / mean(middle) - 1 : 0;
  // "No growth trend": over the second half, the process without the database cache and the JS
  // heap rise by less than 1 MiB a minute, and the last third's mean is within 5% of the middle third's.
  const flat = ownSlope < 1 && heapSlope < 1 && growth < 0.05;
  lines.push(
    '',
    `- Slopes over the second half, MiB/min: RSS ${f(rssSlope, 2)}, database ${f(databaseSlope, 2)}, RSS − database ${f(ownSlope, 2)}, JS heap ${f(heapSlope, 2)}; mean RSS − database, last third vs middle third: ${f(growth * 100)}%.`,
    `- Memory trend: ${flat ? 'none (pass)' : 'growing (fail)'}; pass means RSS − database and JS heap each rise by less than 1 MiB/min over the second half and the last third is within +5% of the middle third.`,
    `- Events: ${totals.accepted} accepted over HTTP and ${totals.viewerEvents} sent by viewers; ${totals.stored} stored; ${totals.delivered} distinct webhook deliveries; ${totals.failures} failed operations.`,
    `- Every stored event delivered: ${totals.delivered >= totals.stored ? 'yes' : 'no'}; every HTTP-accepted event stored: ${totals.stored >= totals.accepted ? 'yes' : 'no'}.`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  if (!flat || totals.failures > 0 || totals.delivered < totals.stored || totals.stored < totals.accepted) process.exitCode = 1;
}

main().catch((error: unknown) => {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
