import { request } from 'undici';
import { uuidv7 } from 'uuidv7';
import type { CDPSession, Page } from 'playwright-core';
import { buildDashboard } from '@svc/dashboard/build';
import { launchBrowser } from '../apps/server/test/browser';
import { LiveViewers } from './dashboard-viewers';
import { base62 } from './ingest';
import { percentile } from './load';
import { startService, tempFolder } from './processes';
import { fmt, type BenchTable } from './report';

/** The issue's targets for the dashboard in a browser. */
export const TARGET_FIRST_VISIT_MS = 1_000;
export const TARGET_FIRST_VISIT_JS_BYTES = 150_000;
export const TARGET_LIVE_BLOCKING_MS = 50;
export const TARGET_EVENT_TO_SCREEN_MS = 1_500;
/** Chrome DevTools' "Fast 4G": 9 Mbit/s down, 1.5 Mbit/s up, 60 ms latency. */
const FAST_4G = { offline: false, latency: 60, downloadThroughput: (9_000_000 / 8), uploadThroughput: (1_500_000 / 8) };
const SESSIONS = 300;
/** Live load: WebSocket viewers, each tracking one event a second over its socket, for LIVE_SECONDS. */
const LIVE_VIEWERS = 500;
const LIVE_SECONDS = 20;
const LIVE_TICK_MS = 100;
/** Votes cast per tick until every viewer voted (500 viewers: all within 2 s). */
const LIVE_VOTES_PER_TICK = 25;
const LIVE_BROADCAST = 'bc-live';
const LIVE_POLL = { type: 'poll', question: 'Who scores next?', options: ['Home', 'Away', 'Nobody'] };
/** A marker order every MARKER_MS; its currency appears nowhere else, so its count on screen is unambiguous. */
const MARKER_MS = 2_000;
const MARKER_CURRENCY = 'JPY';
/** Long tasks count as blocking beyond this (the Total Blocking Time rule). */
const LONG_TASK_MS = 50;
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

interface LiveResult {
  renders: number;
  blockingPerUpdateMs: number[];
  eventToScreenMs: number[];
  eventsSent: number;
  votes: number;
  viewersOpen: number;
  runErrors: boolean;
}

/**
 * The overview in live mode while LIVE_VIEWERS WebSocket viewers join a broadcast, vote in its
 * poll and each track an event a second over their sockets: main-thread blocking per screen
 * update (Σ of long tasks beyond 50 ms between one update and the next) and the time from a
 * viewer tracking a marker order to its count on screen.
 */
async function liveLoad(page: Page, origin: string, keys: { admin: Record<string, string>; apiKey: string }, log: (line: string) => void): Promise<LiveResult> {
  const adminCall = async (path: string, body?: unknown) => {
    const answer = await request(`${origin}${path}`, { method: 'POST', headers: keys.admin, body: JSON.stringify(body ?? {}) });
    const json = (await answer.body.json()) as { id?: string };
    if (answer.statusCode >= 300) throw new Error(`POST ${path} answered ${answer.statusCode}: ${JSON.stringify(json)}`);
    return json;
  };
  await adminCall('/v1/broadcasts', { id: LIVE_BROADCAST, campaignId: 1, title: 'Live match' });
  const poll = await adminCall(`/v1/broadcasts/${LIVE_BROADCAST}/overlays`, LIVE_POLL);
  await adminCall(`/v1/broadcasts/${LIVE_BROADCAST}/overlays/${poll.id}/show`);
  await page.goto(`${origin}/?live=1`);
  await page.getByTestId('unique-viewers').waitFor();
  await page.evaluate((longTaskMs) => {
    const w = window as unknown as { renders: number[]; blocking: Array<[number, number]> };
    w.renders = [];
    w.blocking = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) w.blocking.push([entry.startTime + entry.duration, Math.max(0, entry.duration - longTaskMs)]);
    }).observe({ type: 'longtask' });
    new MutationObserver(() => w.renders.push(performance.now())).observe(document.querySelector('.panels')!, { childList: true, subtree: true, characterData: true });
  }, LONG_TASK_MS);
  const started = Date.now();
  const viewers = new LiveViewers({ origin, apiKey: keys.apiKey, broadcastId: LIVE_BROADCAST, count: LIVE_VIEWERS, sessionPrefix: 'live' });
  // The viewers arrive while the page watches: their joins are part of the load.
  const failed = await viewers.connect();
  log(`  live: ${viewers.openCount} viewers connected in ${Date.now() - started} ms, ${failed} failed`);
  let sent = 0;
  let votes = 0;
  let tick = 0;
  const eventToScreenMs: number[] = [];
  let markers = 0;
  const perTick = Math.round((LIVE_VIEWERS * LIVE_TICK_MS) / 1_000);
  const background = (async () => {
    while (Date.now() - started < LIVE_SECONDS * 1_000) {
      // A tenth of the viewers each tick, so that each sends an event a second.
      sent += viewers.track(tick * perTick, perTick, () => [{ event: 'sponsor_moment.viewed', data: { momentId: 'm1', sponsorId: 'acme' } }]);
      votes += viewers.vote(poll.id!, LIVE_POLL.options.length, LIVE_VOTES_PER_TICK);
      tick++;
      await new Promise((r) => setTimeout(r, LIVE_TICK_MS));
    }
  })();
  while (Date.now() - started < LIVE_SECONDS * 1_000 - MARKER_MS) {
    await new Promise((r) => setTimeout(r, MARKER_MS));
    markers++;
    const items = [{ productId: 'marker', quantity: 1, unitPrice: 100, currency: MARKER_CURRENCY }];
    const t0 = Date.now();
    // A viewer buys: its order is tracked over its socket like the rest.
    viewers.track(markers, 1, () => [{ event: 'checkout.completed', data: { currency: MARKER_CURRENCY }, sponsorId: 'acme', items, total: 100, orderId: `marker-${markers}` }]);
    await page.waitForFunction((n) => document.querySelector(`[data-testid="orders-JPY"]`)?.textContent === String(n), markers, { polling: 'raf', timeout: 10_000 });
    eventToScreenMs.push(Date.now() - t0);
  }
  await background;
  // The last acks come in.
  await new Promise((r) => setTimeout(r, 500));
  const viewersOpen = viewers.openCount;
  viewers.close();
  const { renders, blocking } = await page.evaluate(() => {
    const w = window as unknown as { renders: number[]; blocking: Array<[number, number]> };
    return { renders: w.renders, blocking: w.blocking };
  });
  // Each long task is charged to the update it follows; updates without one blocked for 0 ms.
  const perUpdate = renders.map(() => 0);
  for (const [end, ms] of blocking) {
    let i = renders.length - 1;
    while (i > 0 && renders[i]! > end) i--;
    if (i >= 0) perUpdate[i]! += ms;
  }
  log(`  live: ${sent} events and ${votes} votes from ${LIVE_VIEWERS} WebSocket viewers in ${LIVE_SECONDS} s (${viewers.acks} acks, ${viewers.errors} errors, ${viewers.drops} drops${viewers.errorSamples.length ? `: ${viewers.errorSamples.join(' | ')}` : ''}), ${renders.length} screen updates, ${blocking.length} long tasks, ${eventToScreenMs.length} markers`);
  const runErrors = failed > 0 || viewers.errors > 0 || viewers.drops > 0;
  return { renders: renders.length, blockingPerUpdateMs: perUpdate, eventToScreenMs, eventsSent: sent, votes, viewersOpen, runErrors };
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
  await page.locator('.line-chart path.line').first().waitFor();
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
  let live: LiveResult | null = null;
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
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await context.request.post(`${service.url}/v1/session`, { data: { token: credentials.SVC_BOOTSTRAP_ADMIN_TOKEN } });
    live = await liveLoad(await context.newPage(), service.url, { admin, apiKey: credentials.SVC_BOOTSTRAP_API_KEY }, log);
    if (live.runErrors) runErrors = true;
    await context.close();
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
  const blockingP95 = live ? percentile(sorted(live.blockingPerUpdateMs), 95) : NaN;
  const screenP95 = live ? percentile(sorted(live.eventToScreenMs), 95) : NaN;
  return {
    title: 'Dashboard UI: Chromium over Fast 4G (9 Mbit/s, 60 ms)',
    rows: [
      { figure: 'first visit to a usable overview, median (ms)', value: fmt.ms(first), baseline: fmt.ms(api), ratio: fmt.ratio(first, api), target: `≤ ${fmt.int(TARGET_FIRST_VISIT_MS)}`, verdict: first <= TARGET_FIRST_VISIT_MS ? 'pass' : 'fail' },
      { figure: 'first visit, slowest run (ms)', value: fmt.ms(max((v) => v.firstVisitMs)), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: 'compressed JavaScript on a first visit (bytes)', value: fmt.int(js), baseline: '—', ratio: '—', target: `≤ ${fmt.int(TARGET_FIRST_VISIT_JS_BYTES)}`, verdict: js <= TARGET_FIRST_VISIT_JS_BYTES ? 'pass' : 'fail' },
      { figure: 'tab change Overview → Events (ms, median)', value: fmt.ms(p50((v) => v.tabChangeMs)), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: `live, ${LIVE_VIEWERS} WebSocket viewers: main-thread blocking per update, p95 (ms)`, value: fmt.ms(blockingP95), baseline: '—', ratio: '—', target: `< ${TARGET_LIVE_BLOCKING_MS}`, verdict: blockingP95 < TARGET_LIVE_BLOCKING_MS ? 'pass' : 'fail' },
      { figure: `live, ${LIVE_VIEWERS} WebSocket viewers: event to screen, p95 (ms)`, value: fmt.ms(screenP95), baseline: '—', ratio: '—', target: `< ${fmt.int(TARGET_EVENT_TO_SCREEN_MS)}`, verdict: screenP95 < TARGET_EVENT_TO_SCREEN_MS ? 'pass' : 'fail' },
      { figure: 'live: viewers still connected at the end / votes cast', value: live ? `${fmt.int(live.viewersOpen)} / ${fmt.int(live.votes)}` : '—', baseline: '—', ratio: '—', target: `${fmt.int(LIVE_VIEWERS)} / ${fmt.int(LIVE_VIEWERS)}`, verdict: live && live.viewersOpen === LIVE_VIEWERS && live.votes === LIVE_VIEWERS ? 'pass' : 'fail' },
      { figure: 'live: screen updates in the run', value: live ? fmt.int(live.renders) : '—', baseline: '—', ratio: '—', target: `≤ ${LIVE_SECONDS + 1} (one a second)`, verdict: live && live.renders <= LIVE_SECONDS + 1 ? 'pass' : 'fail' },
      { figure: 'asset requests / bytes on a tab change', value: `${tabRequests} / ${fmt.int(tabBytes)}`, baseline: '—', ratio: '—', target: '0 / 0', verdict: tabRequests === 0 && tabBytes === 0 ? 'pass' : 'fail' },
    ],
    notes: [
      `${options.runs} first visits, each in a fresh browser context (empty cache) with a session cookie, throttled with CDP Network.emulateNetworkConditions (latency 60 ms, 9 Mbit/s down, 1.5 Mbit/s up); ${SESSIONS} sessions of activity over 3 days in a fresh service.`,
      'Usable = the headline numbers and the viewer chart are on screen. Baseline: GET /v1/analytics/overview alone, fetched by the same throttled page right after (the API part of the wait).',
      'Bytes are encoded (compressed) bytes as received (CDP encodedDataLength, headers included).',
      `Live (unthrottled): the overview in live mode while ${LIVE_VIEWERS} WebSocket viewers connect to the gateway with the public key (as the SDK: contentId ${LIVE_BROADCAST}, a broadcast.joined tracked once welcomed), vote in the broadcast's poll (${LIVE_VOTES_PER_TICK} votes per ${LIVE_TICK_MS} ms until all voted) and each track a sponsor impression a second over their socket for ${LIVE_SECONDS} s; a screen update is a DOM change under .panels (panels replaced or the live count); blocking per update = Σ (long task − ${LONG_TASK_MS} ms) of the long tasks that ended after it and before the next; event to screen = from a viewer tracking a marker order (its own currency) over its socket to its count on screen, one every ${MARKER_MS / 1_000} s.`,
    ],
    runErrors,
  };
}
