import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { startTestApp, type TestApp } from './test-app';
import { ViewerPool, type Message } from './ws-client';

const REALTIME = { heartbeatIntervalMs: 150, resumeGraceMs: 300, throttleMs: 50 };
const T0 = Date.parse('2026-11-20T18:00:00.000Z');

/**
 * Every message that shows an overlay tells when the admin showed it (`shownAt`), and a hide
 * when it happened (`hiddenAt`), by the service's clock: a player behind the live edge shows
 * and hides each overlay when its playhead reaches those times.
 */
describe('overlay show and hide times', () => {
  let t: TestApp;
  let clock: ManualClock;
  const viewers = new ViewerPool('timed');
  beforeEach(async () => {
    clock = new ManualClock(T0);
    t = await startTestApp({ listen: true, clock, config: { realtime: REALTIME } });
  });
  afterEach(async () => {
    viewers.terminateAll();
    await t.close();
  });

  const admin = () => ({ authorization: `Bearer ${t.demo.adminToken}` });
  const welcomed = (contentId: string) => viewers.welcomed(t.url, t.demo.apiKey, contentId);
  const lineup = async (broadcastId: string) => {
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin(), payload: { id: broadcastId, campaignId: 1 } });
    const created = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays`, headers: admin(), payload: { type: 'lineup', items: [{ title: 'Kick-off' }] } });
    expect(created.statusCode, created.body).toBe(201);
    return created.json() as { id: string; shownAt: string | null };
  };
  const act = (broadcastId: string, id: string, action: 'show' | 'hide') =>
    t.app.inject({ method: 'POST', url: `/v1/broadcasts/${broadcastId}/overlays/${id}/${action}`, headers: admin() });
  const overlayOf = (broadcastId: string, id: string) => t.app.inject({ url: `/v1/broadcasts/${broadcastId}/overlays/${id}`, headers: admin() });

  it('pushes shownAt with a show and hiddenAt with a hide, both the clock\'s time, and returns shownAt from the admin API', async () => {
    const created = await lineup('timed');
    expect(created.shownAt).toBeNull();
    const viewer = await welcomed('timed');

    clock.set(T0 + 5_000);
    await act('timed', created.id, 'show');
    const shown = await viewer.next((m) => m.type === 'overlay.show');
    expect(shown.overlay).toMatchObject({ id: created.id, shownAt: '2026-11-20T18:00:05.000Z' });
    expect((await overlayOf('timed', created.id)).json()).toMatchObject({ shownAt: '2026-11-20T18:00:05.000Z' });

    // Shown again while on screen: it keeps its moment (a viewer behind the live edge keeps it).
    clock.set(T0 + 7_000);
    await act('timed', created.id, 'show');
    const reshown = await viewer.next((m) => m.type === 'overlay.show' && m !== shown);
    expect(reshown.overlay).toMatchObject({ shownAt: '2026-11-20T18:00:05.000Z' });

    clock.set(T0 + 9_000);
    await act('timed', created.id, 'hide');
    expect(await viewer.next((m) => m.type === 'overlay.hide')).toEqual({ type: 'overlay.hide', overlayId: created.id, hiddenAt: '2026-11-20T18:00:09.000Z' });
    // Hidden again while hidden: nothing to tell viewers, the moment it went stays.
    clock.set(T0 + 10_000);
    await act('timed', created.id, 'hide');
    // A hidden overlay keeps the time it was last shown.
    expect((await overlayOf('timed', created.id)).json()).toMatchObject({ active: false, shownAt: '2026-11-20T18:00:05.000Z' });

    clock.set(T0 + 20_000);
    await act('timed', created.id, 'show');
    const again = await viewer.next((m) => m.type === 'overlay.show' && m !== shown && m !== reshown);
    expect(again.overlay).toMatchObject({ shownAt: '2026-11-20T18:00:20.000Z' });

    // Deleting a shown overlay hides it, with the time of the deletion.
    clock.set(T0 + 30_000);
    await t.app.inject({ method: 'DELETE', url: `/v1/broadcasts/timed/overlays/${created.id}`, headers: admin() });
    const hides = () => viewer.ofType('overlay.hide');
    await viewer.next((m) => m.type === 'overlay.hide' && m.hiddenAt === '2026-11-20T18:00:30.000Z');
    expect(hides().map((m) => m.hiddenAt)).toEqual(['2026-11-20T18:00:09.000Z', '2026-11-20T18:00:30.000Z']);
  });

  it('gives the overlays of a welcome their shownAt, also after a restart', async () => {
    const created = await lineup('kept');
    clock.set(T0 + 7_000);
    await act('kept', created.id, 'show');
    const welcome = (await welcomed('kept')).ofType('welcome')[0]!;
    expect(welcome.overlays).toMatchObject([{ id: created.id, shownAt: '2026-11-20T18:00:07.000Z' }]);

    viewers.terminateAll();
    await t.close();
    clock.set(T0 + 60_000);
    t = await startTestApp({ listen: true, clock, reopen: t, config: { realtime: REALTIME } });
    const again = (await welcomed('kept')).ofType('welcome')[0]!;
    expect((again.overlays as Message[]).map((o) => [o.id, o.shownAt])).toEqual([[created.id, '2026-11-20T18:00:07.000Z']]);
    expect((await overlayOf('kept', created.id)).json()).toMatchObject({ shownAt: '2026-11-20T18:00:07.000Z' });
  });
});
