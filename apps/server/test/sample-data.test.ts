import { afterEach, describe, expect, it } from 'vitest';
import { sampleDataset } from '@svc/simulator';
import { loadSampleData } from '../src/sample-data';
import { startTestApp, type TestApp } from './test-app';

describe('sample data of the demo tenant', () => {
  let t: TestApp;
  afterEach(() => t.close());

  it('is the same on every machine and is stored whole, filling every panel', async () => {
    const now = Date.UTC(2026, 10, 21, 12);
    const a = sampleDataset(now);
    const b = sampleDataset(now);
    expect(a.events.map((e) => [e.event, e.timestamp, e.userId])).toEqual(b.events.map((e) => [e.event, e.timestamp, e.userId]));
    t = await startTestApp();
    const tenant = await t.services.tenants.getTenant('demo');
    const accepted = await loadSampleData(t.services, tenant);
    const stored = await t.services.storage.events.countEvents({ tenantSeq: tenant.seq });
    expect(accepted).toBe(stored);
    expect(stored).toBeGreaterThan(2_000);
    expect((await t.app.inject({ url: '/v1/rejected-events', headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json().data).toEqual([]);
    const overview = (await t.app.inject({ url: '/v1/analytics/overview?from=2026-01-01', headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json();
    expect(overview.viewers.uniqueViewers).toBeGreaterThan(100);
    expect(overview.engagement.rate).toBeGreaterThan(0.2);
    expect(overview.polls.length).toBeGreaterThan(5);
    expect(overview.sponsors.length).toBeGreaterThan(5);
    expect(overview.revenue[0].orders).toBeGreaterThan(5);
    expect(overview.funnel[3].sessions).toBeGreaterThan(0);
    const campaigns = (await t.app.inject({ url: '/v1/campaigns', headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json().data;
    expect(campaigns.map((c: { id: number }) => c.id)).toEqual([1, 2, 3]);
  });
});
