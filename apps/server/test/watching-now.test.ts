import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer } from './ws-client';

describe('GET /v1/analytics/watching-now', () => {
  let t: TestApp;
  const viewers: TestViewer[] = [];
  beforeEach(async () => {
    t = await startTestApp({ listen: true });
    const admin = { authorization: `Bearer ${t.demo.adminToken}` };
    for (const id of ['b1', 'b2', 'b3']) await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin, payload: { id, campaignId: 1 } });
  });
  afterEach(async () => {
    for (const viewer of viewers.splice(0)) viewer.ws.terminate();
    await t.close();
  });

  const watching = async (token = t.demo.adminToken) => {
    const response = await t.app.inject({ url: '/v1/analytics/watching-now', headers: { authorization: `Bearer ${token}` } });
    expect(response.statusCode).toBe(200);
    return response.json().data as Array<{ broadcastId: string; live: number }>;
  };
  const watch = async (sessionId: string, contentId: string) => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId, contentId });
    await viewer.next((m) => m.type === 'welcome');
    viewers.push(viewer);
    return viewer;
  };

  it('counts the viewers connected now per broadcast, most watched first, leaving out broadcasts nobody watches', async () => {
    expect(await watching()).toEqual([]);
    await watch('svc_w1', 'b2');
    const leaving = await watch('svc_w2', 'b1');
    await watch('svc_w3', 'b1');
    expect(await watching()).toEqual([{ broadcastId: 'b1', live: 2 }, { broadcastId: 'b2', live: 1 }]);
    // Another tenant sees none of them.
    expect(await watching(t.other.adminToken)).toEqual([]);
    leaving.ws.terminate();
    await expect.poll(watching).toEqual([{ broadcastId: 'b1', live: 1 }, { broadcastId: 'b2', live: 1 }]);
  });

  it('needs the admin token', async () => {
    const response = await t.app.inject({ url: '/v1/analytics/watching-now', headers: { authorization: `Bearer ${t.demo.apiKey}` } });
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toContain('application/problem+json');
  });
});
