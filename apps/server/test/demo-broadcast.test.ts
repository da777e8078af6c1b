import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEMO_BROADCAST_ID, DEMO_SCENES, DemoBroadcast } from '../src/demo-broadcast';
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

  it('hides the previous scene before it shows the next, so that two scenes are never on screen together', async () => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_demo1', contentId: DEMO_BROADCAST_ID });
    await viewer.next((m) => m.type === 'welcome');
    await demo.start();
    // One whole round and back to the first scene (the poll).
    const firstPoll = (await viewer.next((m) => m.type === 'overlay.show')).overlay as Message;
    expect(firstPoll.type).toBe('poll');
    await viewer.next((m) => m.type === 'overlay.show' && (m.overlay as Message).id === firstPoll.id && m !== viewer.ofType('overlay.show')[0], 10_000);

    // What a viewer has on screen when each show arrives: only overlays of that show's scene.
    const sceneOf = (overlay: Message) => DEMO_SCENES.filter((scene) => scene.some((key) => kindOf(key) === overlay.type));
    const onScreen = new Map<string, Message>();
    let scenes = 0;
    for (const message of viewer.messages) {
      if (message.type === 'overlay.hide') onScreen.delete(String(message.overlayId));
      if (message.type !== 'overlay.show') continue;
      const overlay = message.overlay as Message;
      if (onScreen.size === 0) scenes++;
      const together = [...onScreen.values()].filter((o) => o.id !== overlay.id);
      const sharedScene = (o: Message) => sceneOf(o).some((scene) => sceneOf(overlay).includes(scene));
      expect(together.filter((o) => !sharedScene(o)).map((o) => o.type), `on screen when ${String(overlay.type)} was shown`).toEqual([]);
      onScreen.set(String(overlay.id), overlay);
    }
    expect(scenes).toBeGreaterThanOrEqual(2);
    viewer.ws.terminate();
  });

  it('brings countdowns, the lineup and picture addresses up to date each time a scene is shown', async () => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_demo2', contentId: DEMO_BROADCAST_ID });
    await viewer.next((m) => m.type === 'welcome');
    const started = Date.now();
    await demo.start();
    const shown = async (type: string) => (await viewer.next((m) => m.type === 'overlay.show' && (m.overlay as Message).type === type, 10_000)).overlay as Message;
    const poll = await shown('poll');
    const moment = await shown('sponsor_moment');
    const lineup = await shown('lineup');
    const product = await shown('product');
    // The poll closes within its scene, after it was shown.
    const closesAt = Date.parse(String(poll.closesAt));
    expect(closesAt).toBeGreaterThan(started);
    expect(closesAt - Date.parse(String(poll.shownAt))).toBeLessThanOrEqual(STEP_MS);
    expect(moment.sponsor).toMatchObject({ id: 'acme', name: 'Acme Sports', logoUrl: 'http://localhost:8080/demo/images/acme-logo.svg' });
    expect(product.imageUrl).toMatch(/^http:\/\/localhost:8080\/demo\/images\/[\w-]+\.svg$/);
    // One item of the lineup is on now.
    const items = lineup.items as Array<{ at: string }>;
    expect(items.filter((item) => Date.parse(item.at) <= Date.now()).length).toBeGreaterThan(0);
    expect(items.filter((item) => Date.parse(item.at) > Date.now()).length).toBeGreaterThan(0);
    // Shown again a round later: a new countdown.
    const again = (await viewer.next((m) => m.type === 'overlay.show' && (m.overlay as Message).id === poll.id && m.overlay !== poll, 10_000)).overlay as Message;
    expect(Date.parse(String(again.closesAt))).toBeGreaterThan(closesAt);
    viewer.ws.terminate();
  });

  it('serves the pictures it refers to, and nothing else', async () => {
    const logo = await t.app.inject({ url: '/demo/images/acme-logo.svg' });
    expect(logo.statusCode).toBe(200);
    expect(logo.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(logo.body).toMatch(/^<svg /);
    for (const name of ['constructor', '__proto__', 'nope.svg']) expect((await t.app.inject({ url: `/demo/images/${name}` })).statusCode, name).toBe(404);
  });
});

function kindOf(key: string): string {
  return key === 'moment' ? 'sponsor_moment' : ['poll', 'lineup', 'contest'].includes(key) ? key : 'product';
}
