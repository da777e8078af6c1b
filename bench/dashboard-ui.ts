import { request } from 'undici';
import { uuidv7 } from 'uuidv7';
import type { CDPSession, Page } from 'playwright-core';
import { buildDashboard } from '@svc/dashboard/build';
import { launchBrowser } from '../apps/server/test/browser';
import { base62 } from './ingest';
import { percentile } from './load';
import { startService, tempFolder } from './processes';
import { fmt, type BenchTable } from './report';

/** The targets for the dashboard in a browser. */
export const TARGET_FIRST_VISIT_MS = 1_000;
export const TARGET_FIRST_VISIT_JS_BYTES = 150_000;
/** Chrome DevTools' "Fast 4G": 9 Mbit/s down, 1.5 Mbit/s up, 60 ms latency. */
const FAST_4G = { offline: false, latency: 60, downloadThroughput: (9_000_000 / 8), uploadThroughput: (1_500_000 / 8) };
const SESSIONS = 300;
const EVENTS_PER_BATCH = 100;

export interface DashboardUiOptions {
  /** First visits measured, each in a fresh browser context (empty cache). */
  runs: number;
  log: (line: string) => void;
}

interface Visit {
  firstVisitMs: number;
  scriptBytes: number;
  scriptRequests: number;
  overviewApiMs: number;
  tabChangeMs: number;
  tabChangeAssetRequests: number;
  tabChangeAssetBytes: number;
}

/** A few days of activity: sessions joining two broadcasts, sponsor impressions and orders. */
function events(now: number): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const at = (offsetMs: number) => new Date(now - (i % 72) * 3_600_000 - 600_000 + offsetMs).toISOString();
    const base = { sessionId: `svc_ui${i}`, broadcastId: `bc-${i % 2}`, country: ['DE', 'FR', 'ES'][i % 3], userId: i % 4 ? `u${i}` : null };
    out.push({ event: 'broadcast.joined', eventId: uuidv7(), timestamp: at(0), ...base, data: {} });
    out.push({ event: 'sponsor_moment.viewed', eventId: uuidv7(), timestamp: at(60_000), ...base, data: { momentId: 'm1', sponsorId: 'acme' } });
    if (i % 5 === 0) {
      const items = [{ productId: 'shirt', quantity: 1, unitPrice: 30, currency: 'EUR' }];
      out.push({ event: 'checkout.completed', eventId: uuidv7(), timestamp: at(120_000), ...base, data: { currency: 'EUR' }, sponsorId: 'acme', items, total: 30, orderId: `o${i}` });
    }
  }
  return out;
}

/** Collects, per CDP request id, the resource type and the bytes that came over the wire. */
function watchNetwork(cdp: CDPSession) {
  const types = new Map<string, string>();
  const urls = new Map<string, string>();
  const finished: Array<{ type: string; url: string; bytes: number }> = [];
  cdp.on('Network.responseReceived', ({ requestId, type, response }) => {
    types.set(requestId, type);
    urls.set(requestId, response.url);
  });
  cdp.on('Network.loadingFinished', ({ requestId, encodedDataLength }) => {
    finished.push({ type: types.get(requestId) ?? 'Other', url: urls.get(requestId) ?? '', bytes: encodedDataLength });
  });
  return { finished, reset: () => void (finished.length = 0) };
}

async function visit(page: Page, origin: string): Promise<Visit> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', FAST_4G);
  const net = watchNetwork(cdp);
  const t0 = Date.now();
  await page.goto(`${origin}/?from=${new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10)}`);
  await page.getByTestId('unique-viewers').waitFor();
  await page.locator('.line-chart path.line').waitFor();
  const firstVisitMs = Date.now() - t0;
  const scripts = net.finished.filter((f) => f.type === 'Script');
  const overviewApiMs = await page.evaluate(async () => {
    const t = performance.now();
    await (await fetch(`/v1/analytics/overview${location.search}`)).json();
    return performance.now() - t;
  });
  net.reset();
  const t1 = Date.now();
  await page.getByRole('link', { name: 'Events', exact: true }).click();
  await page.getByText('events shown').waitFor();
  const tabChangeMs = Date.now() - t1;
  const assets = net.finished.filter((f) => !new URL(f.url || origin).pathname.startsWith('/v1/'));
  return {
    firstVisitMs,
    scriptBytes: scripts.reduce((s, f) => s + f.bytes, 0),
    scriptRequests: scripts.length,
    overviewApiMs,
    tabChangeMs,
    tabChangeAssetRequests: assets.length,
    tabChangeAssetBytes: assets.reduce((s, f) => s + f.bytes, 0),
  };
}

/**
 * `--only dashboard-ui`: the dashboard in Chromium over a throttled link (Fast 4G): time from
 * navigation to a usable overview (numbers and chart drawn) on a first visit with an empty
 * cache, compressed JavaScript transferred, and what a tab change transfers besides API data.
 */
export async function dashboardUiBenchmark(options: DashboardUiOptions): Promise<BenchTable> {
  const { log } = options;
  await buildDashboard();
  const folder = tempFolder('svc-bench-ui-');
  const credentials = { SVC_BOOTSTRAP_API_KEY: `svc_pk_${base62(32)}`, SVC_BOOTSTRAP_ADMIN_TOKEN: `svc_sk_${base62(32)}` };
  const service = await startService(folder.path, credentials);
  const browser = await launchBrowser();
  const visits: Visit[] = [];
  let runErrors = false;
  try {
    const admin = { authorization: `Bearer ${credentials.SVC_BOOTSTRAP_ADMIN_TOKEN}`, 'content-type': 'application/json' };
    await request(`${service.url}/v1/sponsors`, { method: 'POST', headers: admin, body: JSON.stringify({ id: 'acme', name: 'Acme Sports' }) }).then((r) => r.body.dump());
    const all = events(Date.now());
    let accepted = 0;
    for (let i = 0; i < all.length; i += EVENTS_PER_BATCH) {
      const stored = await request(`${service.url}/v1/events`, { method: 'POST', headers: admin, body: JSON.stringify({ events: all.slice(i, i + EVENTS_PER_BATCH) }) });
      const answer = (await stored.body.json()) as { accepted?: number };
      if (stored.statusCode >= 300) throw new Error(`POST /v1/events answered ${stored.statusCode}: ${JSON.stringify(answer)}`);
      accepted += answer.accepted ?? 0;
    }
    if (accepted !== all.length) runErrors = true;
    log(`  ${accepted} of ${all.length} events stored`);
    for (let i = 0; i < options.runs; i++) {
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      const login = await context.request.post(`${service.url}/v1/session`, { data: { token: credentials.SVC_BOOTSTRAP_ADMIN_TOKEN } });
      if (login.status() >= 300) runErrors = true;
      const result = await visit(await context.newPage(), service.url);
      visits.push(result);
      log(`  visit ${i + 1}: usable in ${result.firstVisitMs} ms, ${result.scriptBytes} B of script, tab change ${result.tabChangeMs} ms with ${result.tabChangeAssetRequests} asset requests`);
      await context.close();
    }
  } finally {
    await browser.close();
    await service.stop();
    folder.remove();
  }
  const sorted = (values: number[]) => Float64Array.from(values).sort();
  const p50 = (pick: (v: Visit) => number) => percentile(sorted(visits.map(pick)), 50);
  const max = (pick: (v: Visit) => number) => Math.max(...visits.map(pick));
  const first = p50((v) => v.firstVisitMs);
  const api = p50((v) => v.overviewApiMs);
  const js = max((v) => v.scriptBytes);
  const tabBytes = max((v) => v.tabChangeAssetBytes);
  const tabRequests = max((v) => v.tabChangeAssetRequests);
  return {
    title: 'Dashboard UI: Chromium over Fast 4G (9 Mbit/s, 60 ms)',
    rows: [
      { figure: 'first visit to a usable overview, median (ms)', value: fmt.ms(first), baseline: fmt.ms(api), ratio: fmt.ratio(first, api), target: `≤ ${fmt.int(TARGET_FIRST_VISIT_MS)}`, verdict: first <= TARGET_FIRST_VISIT_MS ? 'pass' : 'fail' },
      { figure: 'first visit, slowest run (ms)', value: fmt.ms(max((v) => v.firstVisitMs)), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: 'compressed JavaScript on a first visit (bytes)', value: fmt.int(js), baseline: '—', ratio: '—', target: `≤ ${fmt.int(TARGET_FIRST_VISIT_JS_BYTES)}`, verdict: js <= TARGET_FIRST_VISIT_JS_BYTES ? 'pass' : 'fail' },
      { figure: 'tab change Overview → Events (ms, median)', value: fmt.ms(p50((v) => v.tabChangeMs)), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: 'asset requests / bytes on a tab change', value: `${tabRequests} / ${fmt.int(tabBytes)}`, baseline: '—', ratio: '—', target: '0 / 0', verdict: tabRequests === 0 && tabBytes === 0 ? 'pass' : 'fail' },
    ],
    notes: [
      `${options.runs} first visits, each in a fresh browser context (empty cache) with a session cookie, throttled with CDP Network.emulateNetworkConditions (latency 60 ms, 9 Mbit/s down, 1.5 Mbit/s up); ${SESSIONS} sessions of activity over 3 days in a fresh service.`,
      'Usable = the headline numbers and the viewer chart are on screen. Baseline: GET /v1/analytics/overview alone, fetched by the same throttled page right after (the API part of the wait).',
      'Bytes are encoded (compressed) bytes as received (CDP encodedDataLength, headers included). The live figures with 500 simulated viewers are not measured here yet.',
    ],
    runErrors,
  };
}
