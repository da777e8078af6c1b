import { afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { ManualClock } from '@svc/protocol';
import { HttpWebhookSender, RETRY_DELAYS_MS, WebhookDispatcher } from '@svc/webhooks';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';
import { WebhookReceiver } from './webhook-receiver';
import { withoutNodeLabel } from './prometheus-text';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The outbox's dispatcher (embedded storage, and metadata-only PostgreSQL), driven by the tests' clock. */
function outbox(t: TestApp): WebhookDispatcher {
  const { dispatcher } = t.services;
  if (!(dispatcher instanceof WebhookDispatcher)) throw new Error('These tests drive the outbox dispatcher.');
  return dispatcher;
}

describe('webhooks', () => {
  let t: TestApp;
  const receivers: WebhookReceiver[] = [];
  afterEach(async () => {
    await t.close();
    for (const receiver of receivers.splice(0)) await receiver.stop();
  });

  const receiver = async () => {
    const r = await new WebhookReceiver().start();
    receivers.push(r);
    return r;
  };
  const start = (clock = new ManualClock(Date.now()), timeoutMs = 15_000) =>
    startTestApp({ clock, config: { webhookAllowPrivate: true }, webhookSender: new HttpWebhookSender(true, timeoutMs), random: () => 0.5 });
  const admin = (token?: string) => ({ authorization: `Bearer ${token ?? t.demo.adminToken}` });
  const addEndpoint = async (url: string, extra: Record<string, unknown> = {}, token?: string) => {
    const response = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin(token), payload: { url, ...extra } });
    expect(response.statusCode, response.body).toBe(201);
    return response.json() as { id: string; secret: string };
  };
  const send = (events: Record<string, unknown>[], apiKey?: string) =>
    t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': apiKey ?? t.demo.apiKey }, payload: { events } });
  const deliveries = async (endpointId: string) =>
    (await t.app.inject({ url: `/v1/webhooks/${endpointId}/deliveries`, headers: admin() })).json().data as Array<Record<string, unknown>>;

  it('delivers every accepted event once, signed so that the reference verifier accepts it', async () => {
    t = await start();
    const r = await receiver();
    const endpoint = await addEndpoint(r.url);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const events = [validEvent('poll.voted', new Date()), validEvent('checkout.completed', new Date())];
    await send([...events, events[0]!]); // repeated inside the request: delivered once
    await send(events); // duplicates are not delivered again
    await outbox(t).runDue();
    expect(r.received).toHaveLength(2);
    const verifier = new Webhook(endpoint.secret);
    for (const request of r.received) {
      const payload = verifier.verify(request.body, request.headers as Record<string, string>) as Record<string, unknown>;
      expect(request.headers['webhook-id']).toBe(payload.eventId);
      expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['user-agent']).toMatch(/^Svc-Webhooks\//);
    }
    const purchase = JSON.parse(r.received.find((x) => x.body.includes('checkout.completed'))!.body);
    expect(purchase).toMatchObject({ eventId: events[1]!.eventId, event: 'checkout.completed', orderId: 'order-1', total: 99, campaignId: 1 });
    const tampered = r.received[0]!.body.replace(/"eventId":"[^"]+"/, '"eventId":"00000000-0000-7000-8000-000000000000"');
    expect(tampered).not.toBe(r.received[0]!.body);
    expect(() => verifier.verify(tampered, r.received[0]!.headers as Record<string, string>)).toThrow();
    const log = await deliveries(endpoint.id);
    expect(log.map((d) => d.status)).toEqual(['delivered', 'delivered']);
    expect(log[0]).toMatchObject({ attempts: 1, lastStatusCode: 200 });
  });

  it('starts the next delivery as soon as one ends, without waiting for the next dispatch round', async () => {
    t = await start(new ManualClock(Date.now()));
    const r = await receiver();
    await addEndpoint(r.url);
    const events = Array.from({ length: 40 }, () => validEvent('poll.voted', new Date()));
    expect((await send(events)).json().accepted).toBe(40);
    // With rounds an hour apart, only finished deliveries can start the next ones (8 at a time).
    await t.services.dispatcher.start(HOUR);
    const delivered = () => new Set(r.received.map((x) => x.headers['webhook-id']));
    for (let i = 0; i < 200 && delivered().size < 40; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(delivered()).toEqual(new Set(events.map((e) => e.eventId)));
    // Every receiver answered 200 at once: nothing had a reason to go twice.
    expect(r.received).toHaveLength(40);
  });

  it('keeps the delivery log for 30 days, then the retention purge removes it', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    const endpoint = await addEndpoint(r.url);
    expect((await send([validEvent('poll.voted', new Date(clock.now()))])).json().accepted).toBe(1);
    await outbox(t).runDue();
    expect((await deliveries(endpoint.id)).map((d) => d.status)).toEqual(['delivered']);
    clock.advance(29 * DAY);
    expect((await t.services.retention.runOnce()).deliveries).toBe(0);
    expect(await deliveries(endpoint.id)).toHaveLength(1);
    clock.advance(2 * DAY);
    expect((await t.services.retention.runOnce()).deliveries).toBe(1);
    expect(await deliveries(endpoint.id)).toEqual([]);
    // The event itself is kept for the tenant's retention (12 months), not the log's.
    expect(await t.services.storage.events.countEvents({ tenantSeq: t.demo.seq })).toBe(1);
  });

  it('filters by event type, serves several endpoints, and keeps tenants apart', async () => {
    t = await start();
    const [all, polls, other] = [await receiver(), await receiver(), await receiver()];
    await addEndpoint(all.url);
    await addEndpoint(polls.url, { eventTypes: ['poll.voted'] });
    await addEndpoint(other.url, {}, t.other.adminToken);
    await send([validEvent('poll.voted', new Date()), validEvent('product.viewed', new Date())]);
    await outbox(t).runDue();
    expect(all.received.map((x) => JSON.parse(x.body).event).sort()).toEqual(['poll.voted', 'product.viewed']);
    expect(polls.received.map((x) => JSON.parse(x.body).event)).toEqual(['poll.voted']);
    expect(other.received).toEqual([]);
    await send([validEvent('poll.viewed', new Date())], t.other.apiKey);
    await outbox(t).runDue();
    expect(other.received.map((x) => JSON.parse(x.body).event)).toEqual(['poll.viewed']);
    expect(all.received).toHaveLength(2);
  });

  it('retries on the documented schedule while the receiver is down or failing, then delivers', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    const endpoint = await addEndpoint(r.url);
    await r.stop(); // connection refused
    await send([validEvent('poll.voted', new Date(clock.now()))]);
    await outbox(t).runDue();
    let [log] = await deliveries(endpoint.id);
    expect(log).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null });
    expect(String(log!.lastError)).toMatch(/ECONNREFUSED/);
    // With jitter pinned to the middle, each retry is due exactly on the schedule.
    expect(Date.parse(String(log!.nextAttemptAt)) - clock.now()).toBe(RETRY_DELAYS_MS[1]);

    await r.start();
    r.respond = (res) => res.writeHead(500).end('boom');
    clock.advance(RETRY_DELAYS_MS[1]! - 1);
    await outbox(t).runDue();
    expect(r.received).toHaveLength(0); // not due yet
    clock.advance(1);
    await outbox(t).runDue();
    [log] = await deliveries((await t.app.inject({ url: '/v1/webhooks', headers: admin() })).json().data[0].id);
    expect(log).toMatchObject({ status: 'pending', attempts: 2, lastStatusCode: 500 });
    expect(Date.parse(String(log!.nextAttemptAt)) - clock.now()).toBe(RETRY_DELAYS_MS[2]);

    r.respond = (res) => res.writeHead(429, { 'retry-after': '3600' }).end();
    clock.advance(RETRY_DELAYS_MS[2]!);
    await outbox(t).runDue();
    [log] = await deliveries(endpoint.id);
    expect(log).toMatchObject({ attempts: 3, lastStatusCode: 429 });
    // Retry-After (1 h) is longer than the schedule's 30 min: it wins.
    expect(Date.parse(String(log!.nextAttemptAt)) - clock.now()).toBe(HOUR);

    r.respond = (res) => res.writeHead(204).end();
    clock.advance(HOUR);
    await outbox(t).runDue();
    [log] = await deliveries(endpoint.id);
    expect(log).toMatchObject({ status: 'delivered', attempts: 4, lastStatusCode: 204, nextAttemptAt: null });
    expect(r.received.map((x) => x.headers['webhook-id'])).toEqual(Array(3).fill(r.received[0]!.headers['webhook-id']));
  });

  it('gives up after the last retry and records the failure', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    r.respond = (res) => res.writeHead(503).end();
    const endpoint = await addEndpoint(r.url);
    await send([validEvent('poll.voted', new Date(clock.now()))]);
    for (const delay of RETRY_DELAYS_MS) {
      clock.advance(delay);
      await outbox(t).runDue();
    }
    const [log] = await deliveries(endpoint.id);
    expect(log).toMatchObject({ status: 'failed', attempts: RETRY_DELAYS_MS.length, nextAttemptAt: null });
    // The endpoint had failed for 3.4 days: still enabled.
    expect((await t.app.inject({ url: `/v1/webhooks/${endpoint.id}`, headers: admin() })).json().enabled).toBe(true);
  });

  it('disables an endpoint that answers 410 Gone', async () => {
    t = await start();
    const r = await receiver();
    r.respond = (res) => res.writeHead(410).end();
    const endpoint = await addEndpoint(r.url);
    await send([validEvent('poll.voted', new Date()), validEvent('poll.viewed', new Date())]);
    await outbox(t).runDue();
    const state = (await t.app.inject({ url: `/v1/webhooks/${endpoint.id}`, headers: admin() })).json();
    expect(state).toMatchObject({ enabled: false, disabledReason: 'The receiver answered 410 Gone.' });
    expect((await deliveries(endpoint.id)).every((d) => d.status === 'failed')).toBe(true);
    await send([validEvent('poll.voted', new Date())]);
    await outbox(t).runDue();
    expect(r.received.length).toBeLessThanOrEqual(2);
  });

  it('disables an endpoint after 5 days of failures, with the reason', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    r.respond = (res) => res.writeHead(500).end();
    const endpoint = await addEndpoint(r.url);
    for (let day = 0; day <= 5; day++) {
      await send([validEvent('poll.voted', new Date(clock.now()))]);
      await outbox(t).runDue();
      clock.advance(DAY);
    }
    const state = (await t.app.inject({ url: `/v1/webhooks/${endpoint.id}`, headers: admin() })).json();
    expect(state).toMatchObject({ enabled: false, disabledReason: 'Every delivery failed for 5 days.' });
  });

  it('fails the pending deliveries of an endpoint disabled after 5 days, with the reason, and sends them no more', async () => {
    const startedAt = Date.now();
    const clock = new ManualClock(startedAt);
    t = await start(clock);
    const r = await receiver();
    // Every failed delivery waits a day for its next attempt.
    r.respond = (res) => res.writeHead(503, { 'retry-after': String(DAY / 1000) }).end();
    const endpoint = await addEndpoint(r.url);
    const at = (ms: number) => clock.set(startedAt + ms);
    // The first failure starts the 5 days.
    const early = validEvent('poll.voted', new Date(clock.now()));
    await send([early]);
    await outbox(t).runDue();
    // Shortly before the end, a second delivery fails too; both wait until after the end.
    at(5 * DAY - 10 * MINUTE);
    const late = validEvent('poll.voted', new Date(clock.now()));
    await send([late]);
    await outbox(t).runDue();
    // A delivery that fails once the 5 days are over disables the endpoint.
    at(5 * DAY + MINUTE);
    const last = validEvent('poll.viewed', new Date(clock.now()));
    await send([last]);
    await outbox(t).runDue();
    expect((await t.app.inject({ url: `/v1/webhooks/${endpoint.id}`, headers: admin() })).json()).toMatchObject({ enabled: false, disabledReason: 'Every delivery failed for 5 days.' });

    const log = new Map((await deliveries(endpoint.id)).map((d) => [d.eventId, d]));
    for (const waiting of [early, late]) {
      expect(log.get(waiting.eventId)).toMatchObject({ status: 'failed', nextAttemptAt: null, lastError: 'Endpoint disabled: Every delivery failed for 5 days.' });
    }
    expect(log.get(last.eventId)).toMatchObject({ status: 'failed', attempts: 1, nextAttemptAt: null, lastStatusCode: 503 });
    expect(t.services.dispatcher.depth).toBe(0);
    const sent = r.received.length;
    clock.advance(2 * DAY);
    await outbox(t).runDue();
    expect(r.received).toHaveLength(sent);
  });

  it('fails a delivery that was in flight when its endpoint was disabled, and tries it no more', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    const [gone, slow] = [validEvent('poll.voted', new Date()), validEvent('poll.viewed', new Date())];
    // One delivery meets 410 Gone at once; the other's 500 comes long after the endpoint is disabled.
    r.respond = (res, request) => (request.body.includes(String(slow.eventId)) ? setTimeout(() => res.writeHead(500).end(), 600) : res.writeHead(410).end());
    const endpoint = await addEndpoint(r.url);
    await send([gone, slow]);
    await outbox(t).runDue();
    const log = new Map((await deliveries(endpoint.id)).map((d) => [d.eventId, d]));
    expect(log.get(gone.eventId)).toMatchObject({ status: 'failed', lastStatusCode: 410 });
    expect(log.get(slow.eventId)).toMatchObject({ status: 'failed', nextAttemptAt: null, lastError: 'Endpoint disabled: The receiver answered 410 Gone.' });
    expect(t.services.dispatcher.depth).toBe(0);
    clock.advance(DAY);
    await outbox(t).runDue();
    expect(r.received).toHaveLength(2);
  });

  it('counts a receiver slower than the timeout as a failure, and tries again on the schedule', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock, 300);
    const r = await receiver();
    // Far beyond the 300-ms timeout: undici checks its timeouts on a coarse clock (ticks of about
    // half a second, later on a loaded machine), so an answer after 1 s could still beat it.
    r.respond = (res) => setTimeout(() => res.writeHead(200).end(), 5_000);
    const endpoint = await addEndpoint(r.url);
    await send([validEvent('poll.voted', new Date())]);
    await outbox(t).runDue();
    let [log] = await deliveries(endpoint.id);
    expect(log).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null });
    expect(String(log!.lastError)).toMatch(/timeout|Timeout/);
    expect(Date.parse(String(log!.nextAttemptAt)) - clock.now()).toBe(RETRY_DELAYS_MS[1]);

    r.respond = (res) => res.writeHead(200).end();
    clock.advance(RETRY_DELAYS_MS[1]! - 1);
    await outbox(t).runDue();
    expect(r.received).toHaveLength(1);
    clock.advance(1);
    await outbox(t).runDue();
    expect(r.received).toHaveLength(2);
    [log] = await deliveries(endpoint.id);
    expect(log).toMatchObject({ status: 'delivered', attempts: 2, lastStatusCode: 200 });
  });

  it('honours Retry-After given as an HTTP date, for at most 24 hours', async () => {
    const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
    t = await start(clock);
    const r = await receiver();
    const endpoint = await addEndpoint(r.url);
    r.respond = (res) => res.writeHead(503, { 'retry-after': new Date(clock.now() + 2 * HOUR).toUTCString() }).end();
    await send([validEvent('poll.voted', new Date(clock.now()))]);
    await outbox(t).runDue();
    let [log] = await deliveries(endpoint.id);
    expect(Date.parse(String(log!.nextAttemptAt)) - clock.now()).toBe(2 * HOUR);

    r.respond = (res) => res.writeHead(503, { 'retry-after': new Date(clock.now() + 3 * DAY).toUTCString() }).end();
    clock.advance(2 * HOUR);
    await outbox(t).runDue();
    [log] = await deliveries(endpoint.id);
    expect(log).toMatchObject({ status: 'pending', attempts: 2 });
    expect(Date.parse(String(log!.nextAttemptAt)) - clock.now()).toBe(DAY);
  });

  it('does not follow redirects', async () => {
    t = await start();
    const r = await receiver();
    r.respond = (res) => res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
    const endpoint = await addEndpoint(r.url);
    await send([validEvent('poll.voted', new Date())]);
    await outbox(t).runDue();
    expect((await deliveries(endpoint.id))[0]).toMatchObject({ status: 'pending', lastStatusCode: 302 });
  });

  it('signs with both secrets for 24 hours after a rotation', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    const endpoint = await addEndpoint(r.url);
    const rotated = (await t.app.inject({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/rotate-secret`, headers: admin() })).json();
    expect(rotated.secret).not.toBe(endpoint.secret);
    await send([validEvent('poll.voted', new Date(clock.now()))]);
    await outbox(t).runDue();
    const [first] = r.received;
    expect(String(first!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [endpoint.secret, rotated.secret]) new Webhook(secret).verify(first!.body, first!.headers as Record<string, string>);
    // Until the 24 hours are over, both; from then on exactly one, the new secret's.
    clock.advance(DAY - 1_000);
    await send([validEvent('poll.voted', new Date(clock.now()))]);
    await outbox(t).runDue();
    expect(String(r.received[1]!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    clock.advance(1_000);
    await send([validEvent('poll.voted', new Date(clock.now()))]);
    await outbox(t).runDue();
    const last = r.received[2]!;
    const timestamp = new Date(Number(last.headers['webhook-timestamp']) * 1000);
    expect(timestamp.getTime()).toBe(Math.floor(clock.now() / 1000) * 1000);
    expect(last.headers['webhook-signature']).toBe(new Webhook(rotated.secret).sign(String(last.headers['webhook-id']), timestamp, last.body));
    expect(last.headers['webhook-signature']).not.toBe(new Webhook(endpoint.secret).sign(String(last.headers['webhook-id']), timestamp, last.body));
    const revealed = (await t.app.inject({ url: `/v1/webhooks/${endpoint.id}/secret`, headers: admin() })).json();
    expect(revealed.secret).toBe(rotated.secret);
    expect((await t.app.inject({ url: `/v1/webhooks/${endpoint.id}`, headers: admin() })).json().secret).toBeUndefined();
  });

  it('replays one delivery, or every failed one since a time', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    const endpoint = await addEndpoint(r.url);
    await send([validEvent('poll.voted', new Date(clock.now())), validEvent('poll.viewed', new Date(clock.now()))]);
    await outbox(t).runDue();
    const [one] = await deliveries(endpoint.id);
    const replay = await t.app.inject({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/deliveries/${one!.id}/replay`, headers: admin() });
    expect(replay.json()).toEqual({ queued: 1 });
    await outbox(t).runDue();
    expect(r.received).toHaveLength(3);

    r.respond = (res) => res.writeHead(500).end();
    await send([validEvent('poll.voted', new Date(clock.now()))]);
    for (const delay of RETRY_DELAYS_MS) {
      clock.advance(delay);
      await outbox(t).runDue();
    }
    r.respond = (res) => res.writeHead(200).end();
    const since = new Date(clock.now() - 7 * DAY).toISOString();
    const bulk = await t.app.inject({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/replay`, headers: admin(), payload: { since } });
    expect(bulk.json()).toEqual({ queued: 1 });
    await outbox(t).runDue();
    expect((await deliveries(endpoint.id)).every((d) => d.status === 'delivered')).toBe(true);
  });

  it('replays the deliveries failed since a time and leaves out those failed before it', async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    const endpoint = await addEndpoint(r.url);
    const failAll = async (event: Record<string, unknown>) => {
      r.respond = (res) => res.writeHead(500).end();
      await send([event]);
      for (const delay of RETRY_DELAYS_MS) {
        clock.advance(delay);
        await outbox(t).runDue();
      }
    };
    // A success after each failure keeps the endpoint from being disabled.
    const deliver = async (event: Record<string, unknown>) => {
      r.respond = (res) => res.writeHead(200).end();
      await send([event]);
      await outbox(t).runDue();
    };
    const before = validEvent('poll.voted', new Date(clock.now()));
    await failAll(before);
    const deliveredBefore = validEvent('contest.entered', new Date(clock.now()));
    await deliver(deliveredBefore);
    clock.advance(HOUR);
    const since = clock.now();
    clock.advance(HOUR);
    const after = validEvent('poll.viewed', new Date(clock.now()));
    await failAll(after);
    const deliveredAfter = validEvent('contest.entered', new Date(clock.now()));
    await deliver(deliveredAfter);
    expect((await deliveries(endpoint.id)).map((d) => [d.eventId, d.status])).toEqual([
      [deliveredAfter.eventId, 'delivered'],
      [after.eventId, 'failed'],
      [deliveredBefore.eventId, 'delivered'],
      [before.eventId, 'failed'],
    ]);

    const received = r.received.length;
    const replay = await t.app.inject({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/replay`, headers: admin(), payload: { since: new Date(since).toISOString() } });
    expect(replay.json()).toEqual({ queued: 1 });
    await outbox(t).runDue();
    expect(r.received.slice(received).map((x) => x.headers['webhook-id'])).toEqual([after.eventId]);
    const log = new Map((await deliveries(endpoint.id)).map((d) => [d.eventId, d.status]));
    expect(log.get(before.eventId)).toBe('failed');
    expect(log.get(after.eventId)).toBe('delivered');
  });

  it('sends a test message on request and reports the answer', async () => {
    t = await start();
    const r = await receiver();
    const endpoint = await addEndpoint(r.url);
    const result = (await t.app.inject({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, headers: admin() })).json();
    expect(result).toMatchObject({ delivered: true, statusCode: 200 });
    const payload = new Webhook(endpoint.secret).verify(r.received[0]!.body, r.received[0]!.headers as Record<string, string>);
    expect(payload).toMatchObject({ event: 'webhook.test' });
    expect((await deliveries(endpoint.id))[0]).toMatchObject({ event: 'webhook.test', status: 'delivered', lastStatusCode: 200 });
  });

  it("removes a deleted user's pending deliveries", async () => {
    const clock = new ManualClock(Date.now());
    t = await start(clock);
    const r = await receiver();
    r.respond = (res) => res.writeHead(500).end();
    const endpoint = await addEndpoint(r.url);
    await send([validEvent('poll.voted', new Date(clock.now()), { userId: 'leaving-user' }), validEvent('poll.voted', new Date(clock.now()), { userId: 'staying-user' })]);
    await outbox(t).runDue();
    expect(r.received).toHaveLength(2);
    await t.app.inject({ method: 'DELETE', url: '/v1/users/leaving-user/events', headers: admin() });
    await t.services.deletions.idle();
    r.respond = (res) => res.writeHead(200).end();
    clock.advance(RETRY_DELAYS_MS[1]!);
    await outbox(t).runDue();
    expect(r.received.slice(2).map((x) => JSON.parse(x.body).userId)).toEqual(['staying-user']);
    const log = await deliveries(endpoint.id);
    expect(log).toHaveLength(1);
  });

  it('refuses private, loopback and metadata targets unless allowed, and non-http URLs', async () => {
    t = await startTestApp();
    for (const url of ['http://127.0.0.1:9/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/x', 'http://localhost/x', 'ftp://example.com/x', 'not a url']) {
      const response = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin(), payload: { url } });
      expect(response.statusCode, url).toBe(400);
      expect(response.json().errors[0].path).toBe('/url');
    }
    const badType = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin(), payload: { url: 'https://example.com/x', eventTypes: ['poll.nope'] } });
    expect(badType.statusCode).toBe(400);
  });

  it('refuses to connect to a host that resolved to a public address when saved and to loopback now (DNS rebinding)', async () => {
    let address = '93.184.215.14';
    t = await startTestApp({ clock: new ManualClock(Date.now()), random: () => 0.5, resolveHost: async () => [{ address, family: 4 }] });
    const r = await receiver();
    // `localhost`: a connection that bypassed the guarded lookup would reach the receiver.
    const endpoint = await addEndpoint(r.url.replace('127.0.0.1', 'localhost'));
    address = '127.0.0.1';
    await send([validEvent('poll.voted', new Date())]);
    await outbox(t).runDue();
    expect(r.received).toEqual([]);
    expect((await deliveries(endpoint.id))[0]).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null, lastError: 'blocked: private address' });
    const test = (await t.app.inject({ method: 'POST', url: `/v1/webhooks/${endpoint.id}/test`, headers: admin() })).json();
    expect(test).toMatchObject({ delivered: false, error: 'blocked: private address' });
    expect(r.received).toEqual([]);
  });

  it('manages endpoints: list, update, disable, delete; another tenant gets 404', async () => {
    t = await start();
    const r = await receiver();
    const endpoint = await addEndpoint(r.url, { description: 'warehouse' });
    expect((await t.app.inject({ url: '/v1/webhooks', headers: admin() })).json().data).toHaveLength(1);
    const patched = await t.app.inject({ method: 'PATCH', url: `/v1/webhooks/${endpoint.id}`, headers: admin(), payload: { enabled: false, eventTypes: ['checkout.completed'] } });
    expect(patched.json()).toMatchObject({ enabled: false, eventTypes: ['checkout.completed'], disabledReason: 'Disabled by an administrator.' });
    await send([validEvent('checkout.completed', new Date())]);
    await outbox(t).runDue();
    expect(r.received).toEqual([]);
    expect((await t.app.inject({ url: `/v1/webhooks/${endpoint.id}`, headers: admin(t.other.adminToken) })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${endpoint.id}`, headers: admin(t.other.adminToken) })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${endpoint.id}`, headers: admin() })).statusCode).toBe(204);
    expect((await t.app.inject({ url: '/v1/webhooks', headers: admin() })).json().data).toEqual([]);
  });

  it('keeps a tenant at 20 endpoints when 25 are created at once', async () => {
    t = await start();
    const created = await Promise.all(
      Array.from({ length: 25 }, (_, i) => t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin(), payload: { url: `http://127.0.0.1:9/hook-${i}` } })),
    );
    expect(created.filter((r) => r.statusCode === 201)).toHaveLength(20);
    expect(created.filter((r) => r.statusCode === 409).map((r) => r.json().code)).toEqual(Array(5).fill('conflict'));
    expect((await t.app.inject({ url: '/v1/webhooks', headers: admin() })).json().data).toHaveLength(20);
  });

  it('reports retries, failures and the deliveries waiting on /metrics', async () => {
    t = await start();
    const [failing, gone] = [await receiver(), await receiver()];
    failing.respond = (res) => res.writeHead(500).end();
    gone.respond = (res) => res.writeHead(410).end();
    await addEndpoint(failing.url);
    await addEndpoint(gone.url);
    await send([validEvent('poll.voted', new Date()), validEvent('poll.viewed', new Date())]);
    await outbox(t).runDue();
    const metrics = withoutNodeLabel((await t.app.inject({ url: '/metrics' })).body);
    expect(metrics).toContain('svc_webhook_attempts_total{outcome="retry"} 2');
    expect(metrics).toContain('svc_webhook_attempts_total{outcome="failed"} 2');
    expect(metrics).not.toMatch(/svc_webhook_attempts_total\{outcome="delivered"\} [1-9]/);
    expect(metrics).toContain('svc_webhook_delivery_seconds_count 4');
    // The two deliveries of the failing endpoint wait for their retry.
    expect(metrics).toContain('svc_webhook_queue_depth 2');
  });

  it('reports deliveries and the queue on /metrics', async () => {
    t = await start();
    const r = await receiver();
    await addEndpoint(r.url);
    await send([validEvent('poll.voted', new Date())]);
    await outbox(t).runDue();
    const metrics = withoutNodeLabel((await t.app.inject({ url: '/metrics' })).body);
    expect(metrics).toContain('svc_webhook_attempts_total{outcome="delivered"} 1');
    expect(metrics).toMatch(/svc_webhook_delivery_seconds_count 1/);
    expect(metrics).toContain('svc_webhook_queue_depth 0');
  });
});
