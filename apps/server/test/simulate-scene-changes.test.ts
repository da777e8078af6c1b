import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { simulate } from '@svc/simulator';
import { DEMO_BROADCAST_ID, DemoBroadcast } from '../src/demo-broadcast';
import { startTestApp, type TestApp } from './test-app';

/**
 * Scenes far shorter than the viewers' reaction time (0.2–2.2 s): most reactions come due after
 * their poll, contest or card was closed or hidden.
 */
const STEP_MS = 700;
/** Refusals of a vote or entry that crossed its overlay's hide, or its closing time, on the way. */
const IN_FLIGHT_REFUSALS = ['overlay_not_active', 'poll_closed', 'contest_closed'];

describe('svc simulate while the demo changes scenes', () => {
  let t: TestApp;
  let demo: DemoBroadcast;
  beforeEach(async () => {
    t = await startTestApp({ listen: true });
    demo = new DemoBroadcast(t.services.content, t.services.tenants, { stepMs: STEP_MS });
    await demo.start();
  });
  afterEach(async () => {
    demo.stop();
    await t.close();
  });

  it('reacts only to overlays still on screen and open, as a viewer would: no vote or entry refused for a closed or hidden overlay', async () => {
    const result = await simulate({ url: t.url, apiKey: t.demo.apiKey, broadcastId: DEMO_BROADCAST_ID, viewers: 10, seconds: 5, activity: 1 });
    expect(result.failedJoins).toBe(0);
    // Every scene came to the viewers and they reacted to what was open long enough.
    expect(result.votes).toBeGreaterThan(0);
    expect(result.events).toBeGreaterThan(result.viewers * 5);
    // Only a reaction sent while its overlay's hide or closing time was on the wire can be refused:
    // a rare race, against dozens of refusals per run when the viewers react to whatever they saw.
    expect(Object.keys(result.errorCodes).filter((code) => !IN_FLIGHT_REFUSALS.includes(code))).toEqual([]);
    expect(result.errors).toBeLessThanOrEqual(3);
    expect(result.unacknowledged).toBe(0);
    expect(result.acknowledged).toBe(result.events);
  }, 60_000);
});
