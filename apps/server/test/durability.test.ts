import { afterEach, describe, expect, it } from 'vitest';
import { uuidv7 } from 'uuidv7';
import { openEmbeddedStorage } from '@svc/storage';
import { startChildServer, type ChildServer } from './child-server';
import { validEvent } from './events-fixture';
import { API_KEY, ADMIN_TOKEN, tempDataDir } from './test-app';
import { Webhook } from 'standardwebhooks';
import { WebhookReceiver } from './webhook-receiver';

const ROUNDS = 3;
const SENDERS = 6;
const EVENTS_PER_REQUEST = 20;

describe('durability', () => {
  const children: ChildServer[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.process.kill('SIGKILL');
  });

  it('keeps every acknowledged event when the server is killed with SIGKILL mid-ingest', async () => {
    const dataDir = tempDataDir();
    const env = { SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN };
    const acknowledged = new Set<string>();
    let sentAfterKill = 0;

    for (let round = 0; round < ROUNDS; round++) {
      const server = await startChildServer(env);
      children.push(server);
      let killed = false;
      const sender = async () => {
        while (!killed) {
          const events = Array.from({ length: EVENTS_PER_REQUEST }, () =>
            validEvent('poll.voted', new Date(), { eventId: uuidv7() }),
          );
          try {
            const response = await fetch(`${server.url}/v1/events`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-svc-api-key': API_KEY },
              body: JSON.stringify({ sentAt: new Date().toISOString(), events }),
            });
            const body = (await response.json()) as { accepted: number; duplicates: number };
            if (response.ok && body.accepted + body.duplicates === EVENTS_PER_REQUEST) {
              for (const e of events) acknowledged.add(String(e.eventId));
              if (killed) sentAfterKill++;
            }
          } catch {
            // Connection reset by the kill: these events were never acknowledged.
          }
        }
      };
      const senders = Array.from({ length: SENDERS }, sender);
      await new Promise((resolve) => setTimeout(resolve, 400 + Math.random() * 800));
      server.process.kill('SIGKILL');
      await server.exited;
      killed = true;
      await Promise.all(senders);
    }

    // The database opens cleanly after the kills and serves again.
    const restarted = await startChildServer(env);
    children.push(restarted);
    expect((await fetch(`${restarted.url}/readyz`)).status).toBe(200);
    restarted.process.kill('SIGTERM');
    expect(await restarted.exited).toBe(0);

    const storage = await openEmbeddedStorage(dataDir);
    const stored = new Set((await storage.events.queryEvents({ tenantSeq: 1 }, { limit: 10_000_000 })).map((e) => e.eventId));
    await storage.close();
    expect(acknowledged.size).toBeGreaterThan(ROUNDS * EVENTS_PER_REQUEST);
    const lost = [...acknowledged].filter((id) => !stored.has(id));
    expect(lost).toEqual([]);
    expect(sentAfterKill).toBe(0);
  }, 120_000);

  it('shuts down on SIGTERM under load: exits 0 and every answered event is stored', async () => {
    const dataDir = tempDataDir();
    const env = { SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN };
    const server = await startChildServer(env);
    children.push(server);
    const acknowledged = new Set<string>();
    const statuses = new Set<number>();
    let stopping = false;
    const sender = async () => {
      while (!stopping) {
        const events = Array.from({ length: EVENTS_PER_REQUEST }, () => validEvent('broadcast.joined', new Date(), { eventId: uuidv7() }));
        try {
          const response = await fetch(`${server.url}/v1/events`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
            body: JSON.stringify({ events }),
          });
          statuses.add(response.status);
          if (response.ok) for (const e of events) acknowledged.add(String(e.eventId));
        } catch {
          // Refused once the server stopped listening.
        }
      }
    };
    const senders = Array.from({ length: SENDERS }, sender);
    await new Promise((resolve) => setTimeout(resolve, 500));
    server.process.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    stopping = true;
    await Promise.all(senders);
    // 503 is what requests arriving during shutdown get; nothing else may fail.
    expect([...statuses].filter((s) => s !== 200 && s !== 503)).toEqual([]);
    const storage = await openEmbeddedStorage(dataDir);
    const stored = new Set((await storage.events.queryEvents({ tenantSeq: 1 }, { limit: 10_000_000 })).map((e) => e.eventId));
    await storage.close();
    expect(acknowledged.size).toBeGreaterThan(0);
    expect([...acknowledged].filter((id) => !stored.has(id))).toEqual([]);
  }, 60_000);

  it('delivers every accepted event to the webhook after a SIGKILL with deliveries pending', async () => {
    const receiver = await new WebhookReceiver().start();
    receiver.respond = (res) => res.writeHead(503).end(); // keep deliveries pending at first
    const dataDir = tempDataDir();
    const env = { SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' };
    try {
      const server = await startChildServer(env);
      children.push(server);
      const created = await fetch(`${server.url}/v1/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ url: receiver.url }),
      });
      const { secret } = (await created.json()) as { secret: string };
      const acknowledged: string[] = [];
      for (let i = 0; i < 10; i++) {
        const events = Array.from({ length: 20 }, () => validEvent('poll.voted', new Date(), { eventId: uuidv7() }));
        const response = await fetch(`${server.url}/v1/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-svc-api-key': API_KEY },
          body: JSON.stringify({ events }),
        });
        if (response.ok) acknowledged.push(...events.map((e) => String(e.eventId)));
      }
      server.process.kill('SIGKILL');
      await server.exited;
      receiver.respond = (res) => res.writeHead(200).end();

      const restarted = await startChildServer(env);
      children.push(restarted);
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && !acknowledged.every((id) => receiver.ids().includes(id))) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(acknowledged.filter((id) => !receiver.ids().includes(id))).toEqual([]);
      const verifier = new Webhook(secret);
      for (const request of receiver.received.slice(-5)) verifier.verify(request.body, request.headers as Record<string, string>);
    } finally {
      await receiver.stop();
    }
  }, 90_000);
});
