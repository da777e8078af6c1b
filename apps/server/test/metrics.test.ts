import { afterEach, describe, expect, it } from 'vitest';
import { prometheusSamples } from './prometheus-text';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer } from './ws-client';

describe('/metrics of an embedded node', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const scrape = async () => prometheusSamples((await t!.app.inject({ url: '/metrics' })).body);

  it("labels every sample with the node's id (SVC_NODE_ID)", async () => {
    t = await startTestApp({ config: { nodeId: 'edge-7' } });
    await t.app.inject({ url: '/healthz' });
    const samples = await scrape();
    expect(samples.length).toBeGreaterThan(50);
    expect(samples.filter((sample) => sample.labels.node !== 'edge-7')).toEqual([]);
    // A metric's own labels stay beside it.
    expect(samples.find((sample) => sample.name === 'svc_http_request_duration_seconds_count' && sample.labels.route === '/healthz')?.labels).toMatchObject({ node: 'edge-7', status: '200' });
  });

  it('counts the WebSocket connections open on the node', async () => {
    t = await startTestApp({ listen: true });
    const connections = async () => (await scrape()).find((sample) => sample.name === 'svc_ws_connections')?.value;
    expect(await connections()).toBe(0);
    const viewers = [
      await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_metrics1', contentId: 'metrics' }),
      await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_metrics2', contentId: 'metrics' }),
    ];
    await Promise.all(viewers.map((viewer) => viewer.next((m) => m.type === 'welcome')));
    expect(await connections()).toBe(2);
    viewers[0]!.ws.close();
    await viewers[0]!.closed;
    const deadline = Date.now() + 5_000;
    while ((await connections()) !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await connections()).toBe(1);
    viewers[1]!.ws.terminate();
  });

});
