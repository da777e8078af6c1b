import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';

const START = Date.UTC(2026, 0, 15, 12);
const DAY = 86_400_000;

describe('retention', () => {
  let t: TestApp;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = new ManualClock(START);
    t = await startTestApp({ clock });
  });
  afterEach(() => t.close());

  const count = (seq: number) => t.services.storage.events.countEvents({ tenantSeq: seq });

  it("purges exactly the events older than each tenant's retention", async () => {
    await t.app.inject({ method: 'PATCH', url: '/v1/settings', headers: { authorization: `Bearer ${t.other.adminToken}` }, payload: { retentionMonths: 24 } });
    const send = (token: string, when: number) =>
      t.app.inject({ method: 'POST', url: '/v1/events', headers: { authorization: `Bearer ${token}` }, payload: validEvent('poll.viewed', new Date(when)) });
    // Both tenants get one event now and one a week later.
    for (const token of [t.demo.adminToken, t.other.adminToken]) await send(token, START);
    clock.set(START + 7 * DAY);
    for (const token of [t.demo.adminToken, t.other.adminToken]) await send(token, START + 7 * DAY);
    clock.set(Date.UTC(2027, 0, 15, 12) + DAY); // 12 months and a day later
    const report = await t.services.retention.runOnce();
    expect(report.events).toBe(1);
    expect(await count(t.demo.seq)).toBe(1);
    expect(await count(t.other.seq)).toBe(2);
    const [left] = await t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq }, { limit: 10 });
    expect(left!.timestamp).toBe(new Date(START + 7 * DAY).toISOString());

    clock.set(Date.UTC(2028, 0, 15, 12) + DAY); // 24 months and a day
    await t.services.retention.runOnce();
    expect(await count(t.other.seq)).toBe(1);
  });

  it('keeps an event of exactly the retention age and removes it a millisecond later', async () => {
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { authorization: `Bearer ${t.demo.adminToken}` }, payload: validEvent('poll.viewed', new Date(START)) });
    clock.set(Date.UTC(2027, 0, 15, 12));
    await t.services.retention.runOnce();
    expect(await count(t.demo.seq)).toBe(1);
    clock.advance(1);
    await t.services.retention.runOnce();
    expect(await count(t.demo.seq)).toBe(0);
  });

  it('drops quarantined rejects after 30 days', async () => {
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey }, payload: { event: 'bad.one' } });
    clock.advance(29 * DAY);
    expect((await t.services.retention.runOnce()).rejects).toBe(0);
    clock.advance(2 * DAY);
    expect((await t.services.retention.runOnce()).rejects).toBe(1);
    const list = await t.app.inject({ url: '/v1/rejected-events', headers: { authorization: `Bearer ${t.demo.adminToken}` } });
    expect(list.json().data).toEqual([]);
  });
});
