import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from 'uuidv7';
import { MAX_EVENT_DEPTH } from '@svc/protocol';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer } from './ws-client';

/** JSON text of a value `levels` objects deep (`levels` ≥ 1). */
const nestedJson = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;

/** A poll.voted, as JSON text, nested `levels` objects deep in all: the event, its data, then a value in data. */
function deepEventJson(levels: number, eventId = uuidv7()): string {
  const event = JSON.stringify(validEvent('poll.voted', new Date(), { eventId }));
  return event.replace(/"data":\{/, `"data":{"extra":${nestedJson(levels - 2)},`);
}

describe('deeply nested events', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ listen: true });
  });
  afterAll(() => t.close());

  const post = (body: string) =>
    t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'content-type': 'application/json', 'x-svc-api-key': t.demo.apiKey }, payload: body });

  it('rejects an event nested 10,000 levels deep with validation_failed, quarantines a truncated form and stores the rest of its batch', async () => {
    const valid = validEvent('poll.voted', new Date());
    const body = `{"events":[${JSON.stringify(valid)},${deepEventJson(10_000)}]}`;
    expect(body.length).toBeLessThan(512 * 1024);
    const response = await post(body);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ accepted: 1, rejected: [{ index: 1, code: 'validation_failed' }] });
    expect(await t.services.storage.events.queryEvents({ tenantSeq: t.demo.seq }, { limit: 100 })).toEqual(
      expect.arrayContaining([expect.objectContaining({ eventId: valid.eventId })]),
    );
    const quarantined = (await t.app.inject({ url: '/v1/rejected-events', headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json();
    const payload = JSON.stringify(quarantined.data[0].payload);
    expect(quarantined.data[0]).toMatchObject({ code: 'validation_failed', event: 'poll.voted' });
    expect(payload).toContain('[nested too deep]');
    expect(payload.split('{').length - 1).toBeLessThanOrEqual(MAX_EVENT_DEPTH);
  });

  it(`accepts ${MAX_EVENT_DEPTH} levels (the event counting as one) and rejects one more`, async () => {
    const atLimit = await post(deepEventJson(MAX_EVENT_DEPTH));
    expect(atLimit.json()).toMatchObject({ accepted: 1, rejected: [] });
    const past = await post(deepEventJson(MAX_EVENT_DEPTH + 1));
    expect(past.json()).toMatchObject({ accepted: 0, rejected: [{ index: 0, code: 'validation_failed' }] });
  });

  it('rejects the deep event of a WebSocket track message and acknowledges the others', async () => {
    const viewer = await TestViewer.connect(t.url, { apiKey: t.demo.apiKey, sessionId: 'svc_deep1', contentId: 'deep-room' });
    await viewer.next((m) => m.type === 'welcome');
    const validId = uuidv7();
    viewer.send(`{"type":"track","requestId":"deep1","events":[{"event":"poll.viewed","eventId":"${validId}","timestamp":"${new Date().toISOString()}",`
      + `"data":{"pollId":"p1","questionText":"Who?"}},${deepEventJson(10_000)}]}`);
    const ack = await viewer.next((m) => m.requestId === 'deep1');
    expect(ack).toMatchObject({ type: 'ack', ids: [validId], rejected: [{ index: 1, code: 'validation_failed' }] });
    viewer.close();
  });
});
