import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEMO_BROADCAST_ID, DemoBroadcast } from '../src/demo-broadcast';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer, type Message } from './ws-client';

const STEP_MS = 300;

describe('scripted demo broadcast', () => {
  let t: TestApp;
  let demo: DemoBroadcast;
  beforeEach(async () => {
    t = await startTestApp({ listen: true });
    demo = new DemoBroadcast(t.services.content, t.services.tenants, { stepMs: STEP_MS });
  });
  afterEach(async () => {
    demo.stop();
    await t.close();
  });

  it('hides the previous step before it shows the next, so that two steps are never on screen together', async () => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_demo1', contentId: DEMO_BROADCAST_ID });
    await viewer.next((m) => m.type === 'welcome');
    await demo.start();
    // Past the last step (the products) back to the first (the poll): one whole round and a step.
    const shows = () => viewer.ofType('overlay.show').map((m) => m.overlay as Message);
    const firstPoll = (await viewer.next((m) => m.type === 'overlay.show')).overlay as Message;
    expect(firstPoll.type).toBe('poll');
    await viewer.next((m) => m.type === 'overlay.show' && (m.overlay as Message).id === firstPoll.id && m !== viewer.ofType('overlay.show')[0], 10_000);
    expect(shows().length).toBeGreaterThanOrEqual(7);

    // What a viewer has on screen when each show arrives: only overlays of the same step (the product pair).
    const onScreen = new Map<string, Message>();
    for (const message of viewer.messages) {
      if (message.type === 'overlay.hide') onScreen.delete(String(message.overlayId));
      if (message.type !== 'overlay.show') continue;
      const overlay = message.overlay as Message;
      const others = [...onScreen.values()].filter((o) => o.id !== overlay.id);
      expect(others.filter((o) => !(o.type === 'product' && overlay.type === 'product')), `on screen when ${String(overlay.type)} was shown`).toEqual([]);
      onScreen.set(String(overlay.id), overlay);
    }
    viewer.ws.terminate();
  });
});
