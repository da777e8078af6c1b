import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { browserAvailable, launchBrowser } from './browser';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer } from './ws-client';
import { withoutNodeLabel } from './prometheus-text';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Refusal {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One upgrade attempt: the socket when it opened, else the HTTP answer that refused it. */
async function upgrade(t: TestApp, params: Record<string, string>, headers: Record<string, string> = {}): Promise<TestViewer | Refusal> {
  const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/ws?${new URLSearchParams(params)}`, 'svc.v1', { headers });
  const viewer = new TestViewer(ws);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(viewer));
    ws.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += String(chunk)));
      response.on('end', () => {
        ws.terminate();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body });
      });
    });
    ws.once('error', reject);
  });
}

const isRefusal = (result: TestViewer | Refusal): result is Refusal => !(result instanceof TestViewer);

describe('realtime admission', () => {
  let t: TestApp | undefined;
  const viewers: TestViewer[] = [];
  afterEach(async () => {
    for (const viewer of viewers.splice(0)) viewer.ws.terminate();
    await t?.close();
    t = undefined;
  });
  const keep = <T extends TestViewer | Refusal>(result: T): T => {
    if (!isRefusal(result)) viewers.push(result);
    return result;
  };
  let sessions = 0;
  const params = (apiKey: string) => ({ apiKey, sessionId: `svc_adm${++sessions}`, contentId: 'show' });

  it('closes a socket that keeps sending a little over its rate with 4429 within a few seconds, and keeps one just under it', async () => {
    t = await startTestApp({ listen: true, config: { realtime: { messagesPerSecond: 10, messageBurst: 10 } } });
    const over = keep(await TestViewer.connect(t.url, params(t.demo.apiKey)));
    const under = keep(await TestViewer.connect(t.url, params(t.demo.apiKey)));
    await over.next((m) => m.type === 'welcome');
    await under.next((m) => m.type === 'welcome');
    let closedAt: number | null = null;
    void over.closed.then(() => (closedAt = Date.now()));
    // 15 messages a second against 10: never a long run of drops, since a third gets through.
    const started = Date.now();
    for (let tick = 0; closedAt === null && Date.now() - started < 10_000; tick++) {
      over.send({ type: 'ping' });
      if (tick % 2 === 0) under.send({ type: 'ping' });
      await sleep(1000 / 15);
    }
    const firstNotice = await over.next((m) => m.type === 'error' && m.code === 'rate_limited');
    expect(firstNotice).toBeTruthy();
    expect(await Promise.race([over.closed, sleep(1_000).then(() => 'still open')])).toEqual({ code: 4429, reason: 'rate_limited' });
    // Burst spent after about 2 s, then 3 s of dropping (SVC_WS_MAX_OVER_RATE_MS), with room for a busy machine.
    expect(closedAt! - started).toBeLessThan(7_500);
    expect(under.ofType('error')).toEqual([]);
    expect(await under.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
    const metrics = withoutNodeLabel((await t.app.inject({ url: '/metrics' })).body);
    expect(metrics).toMatch(/svc_ws_refused_total\{reason="message_rate"\} 1/);
  });

  it('refuses throttled upgrades before the handshake with 429 problem+json and Retry-After, and counts them', async () => {
    t = await startTestApp({ listen: true, config: { realtime: { upgradesPerAddressPerSecond: 1, upgradeBurst: 3, badKeyUpgradeCost: 10 } } });
    const bad = keep(await upgrade(t, params(`svc_pk_${'N'.repeat(32)}`)));
    expect(isRefusal(bad)).toBe(false);
    expect(await (bad as TestViewer).closed).toEqual({ code: 4401, reason: 'invalid_api_key' });
    // The bad key cost 10 of the bucket's 3: the address now waits, good key or not.
    const refused = await upgrade(t, params(t.demo.apiKey));
    expect(isRefusal(refused)).toBe(true);
    const { status, headers, body } = refused as Refusal;
    expect(status).toBe(429);
    expect(headers['content-type']).toBe('application/problem+json');
    // The debt goes down to one bucket below empty: 4 tokens to win back at 1 a second.
    expect(Number(headers['retry-after'])).toBeGreaterThanOrEqual(3);
    expect(JSON.parse(body)).toMatchObject({ type: 'urn:svc:error:rate_limited', status: 429, code: 'rate_limited' });
    const metrics = withoutNodeLabel((await t.app.inject({ url: '/metrics' })).body);
    expect(metrics).toMatch(/svc_ws_refused_total\{reason="upgrade_rate"\} 1/);
  });

  it('counts viewers behind a trusted proxy by their forwarded address, and ignores the header from anyone else', async () => {
    const realtime = { maxConnectionsPerAddress: 2 };
    const from = (address: string) => ({ 'x-forwarded-for': address });
    t = await startTestApp({ listen: true, config: { trustProxy: '127.0.0.1', realtime } });
    for (let i = 0; i < 2; i++) expect(isRefusal(keep(await upgrade(t, params(t.demo.apiKey), from('203.0.113.7'))))).toBe(false);
    expect(keep(await upgrade(t, params(t.demo.apiKey), from('203.0.113.7')))).toMatchObject({ status: 429 });
    const neighbour = keep(await upgrade(t, params(t.demo.apiKey), from('203.0.113.8')));
    expect(isRefusal(neighbour)).toBe(false);
    expect(await (neighbour as TestViewer).next((m) => m.type === 'welcome')).toBeTruthy();
    for (const viewer of viewers.splice(0)) viewer.ws.terminate();
    await t.close();

    // Without a trusted proxy, a forged header changes nothing: all come from 127.0.0.1.
    t = await startTestApp({ listen: true, config: { realtime } });
    for (let i = 0; i < 2; i++) expect(isRefusal(keep(await upgrade(t, params(t.demo.apiKey), from(`203.0.113.${i + 1}`))))).toBe(false);
    expect(keep(await upgrade(t, params(t.demo.apiKey), from('203.0.113.9')))).toMatchObject({ status: 429 });
    const metrics = withoutNodeLabel((await t.app.inject({ url: '/metrics' })).body);
    expect(metrics).toMatch(/svc_ws_refused_total\{reason="address_connections"\} 1/);
  });

  it('closes a client that offers only another subprotocol with 4406 after completing the handshake', async () => {
    t = await startTestApp({ listen: true });
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/ws?${new URLSearchParams(params(t.demo.apiKey))}`, ['svc.v2', 'svc.v3']);
    const viewer = keep(new TestViewer(ws));
    expect(await viewer.closed).toEqual({ code: 4406, reason: 'unsupported_protocol' });
    expect(viewer.messages).toEqual([]);
  });
});

describe.runIf(browserAvailable())('realtime admission in a real browser', () => {
  let browser: Browser;
  let t: TestApp;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    await t?.close();
  });

  it('lets a page that offers only another subprotocol see close code 4406', async () => {
    t = await startTestApp({ listen: true });
    const page = await browser.newPage();
    try {
      const url = `${t.url.replace('http', 'ws')}/v1/ws?${new URLSearchParams({ apiKey: t.demo.apiKey, sessionId: 'svc_page', contentId: 'show' })}`;
      // Page code as text: in this module `WebSocket` names the ws package, not the browser's.
      const closed = await page.evaluate(`new Promise((resolve) => {
        const ws = new WebSocket(${JSON.stringify(url)}, 'svc.v2');
        ws.onclose = (event) => resolve({ code: event.code, reason: event.reason });
      })`);
      expect(closed).toEqual({ code: 4406, reason: 'unsupported_protocol' });
    } finally {
      await page.close();
    }
  });
});
