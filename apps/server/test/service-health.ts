import { expect } from 'vitest';
import { uuidv7 } from 'uuidv7';
import { validEvent } from './events-fixture';
import type { TestApp } from './test-app';
import { TestViewer } from './ws-client';

const EXPORT_FORMATS = ['json', 'ndjson', 'csv'] as const;

/** Every filter of the events export alone, then all together (values that match the fixture's events). */
function exportFilters(broadcastId: string, userId: string, day: string): string[] {
  const single = [
    '',
    'campaignId=1',
    `from=${day}`,
    `to=${day}`,
    `broadcastId=${encodeURIComponent(broadcastId)}`,
    `userId=${encodeURIComponent(userId)}`,
    'sponsorId=sponsor-1',
    'country=DE',
    'event=poll.voted,product.tapped',
  ];
  return [...single, single.filter(Boolean).join('&')];
}

/**
 * Checks that the service works for both tenants of `t`: the dashboard answers over a range
 * that cuts an hour, new events reach its rollups, every export format answers with every filter, a room of `broadcastId` loads, and
 * erasing `userId` completes. Used after poisoned data went in (or was planted) and a restart.
 */
export async function expectServiceWorks(t: TestApp, broadcastId: string, userId: string): Promise<void> {
  const now = new Date(t.services.clock.now());
  const day = now.toISOString().slice(0, 10);
  for (const tenant of [t.demo, t.other]) {
    const admin = { authorization: `Bearer ${tenant.adminToken}` };
    // A range that starts inside an hour: that part-hour is read from the events themselves.
    const since = new Date(now.getTime() - 30 * 60_000).toISOString();
    const partHour = await t.app.inject({ url: `/v1/analytics/overview?from=${encodeURIComponent(since)}`, headers: admin });
    expect(partHour.statusCode, partHour.body).toBe(200);
    // A fresh viewer on a fresh broadcast: the rollups must take it in (they stall on an unreadable row).
    const fresh = `fresh-${uuidv7()}`;
    const sessionId = `svc_${uuidv7().replace(/-/g, '')}`;
    const stored = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-svc-api-key': tenant.apiKey },
      payload: { events: [validEvent('broadcast.joined', now, { broadcastId: fresh, sessionId }), validEvent('poll.voted', now, { broadcastId: fresh, sessionId })] },
    });
    expect(stored.json()).toMatchObject({ accepted: 2 });
    const overview = await t.app.inject({ url: `/v1/analytics/overview?broadcastId=${fresh}`, headers: admin });
    expect(overview.statusCode, overview.body).toBe(200);
    expect(overview.json().engagement).toEqual({ rate: 1, engagedViewers: 1, joinedViewers: 1 });

    for (const format of EXPORT_FORMATS) {
      for (const filter of exportFilters(broadcastId, userId, day)) {
        const response = await t.app.inject({ url: `/v1/analytics/events?format=${format}&${filter}`, headers: admin });
        expect(response.statusCode, `${format} ${filter}: ${response.body.slice(0, 300)}`).toBe(200);
      }
    }

    const viewer = await TestViewer.connect(t.url, { apiKey: tenant.apiKey, sessionId: `svc_room${uuidv7().slice(-12)}`, contentId: broadcastId });
    const welcome = await viewer.next((m) => m.type === 'welcome').catch(async () => ({ type: 'closed', ...(await viewer.closed) }));
    expect(welcome.type, JSON.stringify(welcome)).toBe('welcome');
    viewer.close();

    const deletion = await t.app.inject({ method: 'DELETE', url: `/v1/users/${encodeURIComponent(userId)}/events`, headers: admin });
    expect(deletion.statusCode).toBe(202);
    await t.services.deletions.idle();
    const job = await t.app.inject({ url: `/v1/deletions/${deletion.json().id}`, headers: admin });
    expect(job.json(), job.body).toMatchObject({ status: 'completed' });
  }
}
