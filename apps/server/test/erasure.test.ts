import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpWebhookSender } from '@svc/webhooks';
import { readStoppedDatabase } from './database-snapshot';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';
import { WebhookReceiver } from './webhook-receiver';
import { TestViewer } from './ws-client';

const USER = 'erase-me-4XkQ9v';
/** A string only the erased user's events hold. */
const MARK = 'Distinctive-Payload-Zq7Wm';

/** Every file under `dir`, at any depth. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

/** `file: needle` for each needle found in the bytes of a file under `dir`. */
function byteSearch(dir: string, needles: string[]): string[] {
  return filesUnder(dir).flatMap((file) => {
    const bytes = readFileSync(file);
    return needles.filter((needle) => bytes.includes(Buffer.from(needle, 'utf8'))).map((needle) => `${file}: ${needle}`);
  });
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('erasure of a user', () => {
  let t: TestApp | null = null;
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
    await t?.close();
    t = null;
  });

  const admin = () => ({ authorization: `Bearer ${t!.demo.adminToken}` });
  const send = (payload: Record<string, unknown>) => t!.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t!.demo.apiKey }, payload });
  const job = async (location: string) => (await t!.app.inject({ url: location, headers: admin() })).json() as Record<string, unknown>;
  const viewer = async (params: Record<string, string>) => {
    const v = await TestViewer.connect(t!.url, { apiKey: t!.demo.apiKey, contentId: 'broadcast-1', ...params });
    cleanups.push(() => v.close());
    await v.next((m) => m.type === 'welcome');
    return v;
  };

  it('leaves no byte of the user in any file under the data folder once the job reports purgedAt', async () => {
    const receiver = await new WebhookReceiver().start();
    cleanups.push(() => receiver.stop());
    t = await startTestApp({
      listen: true,
      config: { webhookAllowPrivate: true, erasureMaxDelaySeconds: 1 },
      webhookSender: new HttpWebhookSender(true),
    });
    t.services.startBackgroundWork();
    const dataDir = t.services.config.dataDir;
    const endpoint = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: admin(), payload: { url: receiver.url } });
    expect(endpoint.statusCode).toBe(201);

    const at = new Date(Date.now() - 60_000);
    // The user's events, each with the distinctive text; a bystander's beside them.
    for (let round = 0; round < 4; round++) {
      const events = Array.from({ length: 50 }, (_, i) => [
        validEvent('poll.viewed', at, { userId: USER, data: { pollId: 'poll-1', questionText: `${MARK} ${round}-${i}` } }),
        validEvent('poll.viewed', at, { userId: `bystander-${i}`, data: { pollId: 'poll-1', questionText: `Ordinary question ${round}-${i}` } }),
      ]).flat();
      expect((await send({ events })).statusCode).toBe(200);
    }
    // A quarantined reject of the user.
    await send({ event: 'poll.unknown', userId: USER, data: { note: MARK } });
    // A live session of the user, which tracks an event too.
    const session = await viewer({ sessionId: 'svc_erased_session1', userId: USER });
    const ack = await session.request({ type: 'track', events: [{ event: 'poll.viewed', timestamp: new Date().toISOString(), data: { pollId: 'poll-1', questionText: `${MARK} live` } }] });
    expect(ack).toMatchObject({ type: 'ack', ids: [expect.any(String)] });
    // Webhook deliveries of the user's events, sent and logged.
    await until(async () => receiver.received.filter((r) => r.body.includes(USER)).length, (n) => n >= 200);

    const response = await t.app.inject({ method: 'DELETE', url: `/v1/users/${USER}/events`, headers: admin() });
    expect(response.statusCode).toBe(202);
    const purged = await until(() => job(response.headers.location as string), (j) => typeof j.purgedAt === 'string');
    expect(purged.status).toBe('completed');
    expect(Date.parse(purged.purgedAt as string)).toBeGreaterThanOrEqual(Date.parse(purged.completedAt as string));
    // The session is still open while the service shuts down cleanly.
    await t.close();
    t = null;

    expect(byteSearch(dataDir, [USER, MARK])).toEqual([]);
    // Everyone else's data survived the purge.
    const [kept] = await readStoppedDatabase<{ n: bigint }>(dataDir, `SELECT count(*) AS n FROM events WHERE user_id LIKE 'bystander-%'`);
    expect(Number(kept!.n)).toBe(200);
  }, 60_000);

  it('erases events sent over HTTP just before the deletion, still on their way to the database', async () => {
    t = await startTestApp();
    // The database is slow to resolve the request's broadcast: the events are not queued for
    // commit yet when the deletion job starts.
    const meta = t.services.storage.meta;
    const resolveBroadcasts = meta.resolveBroadcasts.bind(meta);
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    meta.resolveBroadcasts = async (...args) => {
      await slow;
      return resolveBroadcasts(...args);
    };
    const sending = send({ events: [validEvent('poll.viewed', new Date(Date.now() - 60_000), { userId: USER })] });
    const deleting = await t.app.inject({ method: 'DELETE', url: `/v1/users/${USER}/events`, headers: admin() });
    expect(deleting.statusCode).toBe(202);
    await Promise.race([t.services.deletions.idle(), new Promise((resolve) => setTimeout(resolve, 300))]);
    release();
    expect((await sending).statusCode).toBe(200);
    await t.services.deletions.idle();
    expect(await job(deleting.headers.location as string)).toMatchObject({ status: 'completed', deletedEvents: 1 });
    const left = await t.app.inject({ url: `/v1/analytics/events?format=ndjson&userId=${USER}`, headers: admin() });
    expect(left.body).toBe('');
  });

  it('writes nothing carrying the userId once the job has started, though the session stays open', async () => {
    t = await startTestApp({ listen: true, config: { realtime: { resumeGraceMs: 50 } } });
    const session = await viewer({ sessionId: 'svc_erased_session2', userId: USER });
    const other = await viewer({ sessionId: 'svc_bystander_session', userId: 'bystander' });
    const response = await t.app.inject({ method: 'DELETE', url: `/v1/users/${USER}/events`, headers: admin() });
    await t.services.deletions.idle();
    expect((await job(response.headers.location as string)).status).toBe('completed');

    // The session goes on: its later events and the server's broadcast.left carry no userId.
    const ack = await session.request({ type: 'track', events: [{ event: 'product.viewed', timestamp: new Date().toISOString(), data: { productId: 'sku-1', placement: 'carousel' } }] });
    expect(ack).toMatchObject({ type: 'ack', ids: [expect.any(String)] });
    session.close();
    other.close();
    const exported = () =>
      t!.app.inject({ url: '/v1/analytics/events?format=ndjson', headers: admin() }).then((r) =>
        r.body.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>),
      );
    const events = await until(exported, (rows) => rows.filter((e) => e.event === 'broadcast.left').length === 2);
    expect(events.filter((e) => JSON.stringify(e).includes(USER))).toEqual([]);
    const left = events.filter((e) => e.event === 'broadcast.left');
    expect(left.map((e) => [e.sessionId, e.userId ?? null]).sort()).toEqual([['svc_bystander_session', 'bystander'], ['svc_erased_session2', null]]);
    expect(events.find((e) => e.event === 'product.viewed')).toMatchObject({ sessionId: 'svc_erased_session2' });
  });
});
