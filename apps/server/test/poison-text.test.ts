import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import WebSocket from 'ws';
import { uuidv7 } from 'uuidv7';
import { DATABASE_FILE_NAME } from '@svc/storage';
import { runSvc, startChildServer } from './child-server';
import { expectServiceWorks } from './service-health';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer } from './ws-client';
import { withoutNodeLabel } from './prometheus-text';

/** A poll.voted as the attacker wrote it: JSON text whose strings (and a key) hold a lone surrogate escape. */
function poisonText(eventId: string, userId: string, broadcastId: string): string {
  return `{"event":"poll.voted","eventId":"${eventId}","userId":"${userId}","sessionId":"svc_poison1","broadcastId":"${broadcastId}",`
    + `"timestamp":"${new Date().toISOString()}","data":{"pollId":"p1","questionText":"\\ud800","optionSelected":"A\\udc00",`
    + `"optionIndex":0,"extra":{"deep":[{"k\\udbff":"\\udfff"}]}}}`;
}

/**
 * Writes two events into a stopped server's database as an older version stored them: a lone
 * surrogate escape in `data`, one in a batch whose rollups were never derived (they failed on
 * it), one in a batch already derived.
 */
async function plantPoisonedRows(dataDir: string, tenantSeq: number): Promise<{ pending: string; derived: string }> {
  const instance = await DuckDBInstance.create(join(dataDir, DATABASE_FILE_NAME));
  const connection = await instance.connect();
  const plant = async (eventId: string, batch: number) =>
    connection.run(
      `INSERT INTO events (tenant_seq, event_id, event, user_id, session_id, broadcast_id, campaign_id, ts, received_at, data, batch)
       VALUES ($1, $2::UUID, 'poll.voted', 'poisoner', 'svc_poison1', 'poisoned-room', 1, now(), now(), $3, $4)`,
      [tenantSeq, eventId, '{"pollId":"p1","questionText":"\\ud800","optionSelected":"A","optionIndex":0}', batch],
    );
  const pending = uuidv7();
  const derived = uuidv7();
  await plant(derived, 0);
  await plant(pending, 1);
  connection.closeSync();
  instance.closeSync();
  return { pending, derived };
}

const MENDED = { pollId: 'p1', questionText: '\ufffd', optionSelected: 'A\ufffd', optionIndex: 0, extra: { deep: [{ 'k\ufffd': '\ufffd' }] } };

describe('poison text', () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  });
  const start = async (reopen?: TestApp) => {
    const t = await startTestApp({ listen: true, reopen });
    apps.push(t);
    return t;
  };

  it('stores a lone surrogate sent with the public key as U+FFFD over JSON, beacon and WebSocket, and the service keeps working after a restart', async () => {
    const first = await start();
    const ids = { json: uuidv7(), beacon: uuidv7(), ws: uuidv7() };
    const json = await fetch(`${first.url}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-api-key': first.demo.apiKey },
      body: poisonText(ids.json, 'poisoner', 'poisoned-room'),
    });
    expect(json.status).toBe(200);
    const beacon = await fetch(`${first.url}/v1/events?apiKey=${first.demo.apiKey}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      body: poisonText(ids.beacon, 'poisoner', 'poisoned-room'),
    });
    expect(beacon.status).toBe(200);
    const viewer = await TestViewer.connect(first.url, { apiKey: first.demo.apiKey, sessionId: 'svc_poison1', contentId: 'poisoned-room' });
    await viewer.next((m) => m.type === 'welcome');
    viewer.send(`{"type":"track","requestId":"r1","events":[${poisonText(ids.ws, 'poisoner', 'poisoned-room')}]}`);
    expect(await viewer.next((m) => m.requestId === 'r1')).toMatchObject({ type: 'ack', ids: [ids.ws] });
    viewer.close();
    // A contentId is URL-decoded as UTF-8: bytes of an encoded surrogate (ED A0 80) arrive as U+FFFD.
    const raw = new TestViewer(new WebSocket(`${first.url.replace(/^http/, 'ws')}/v1/ws?apiKey=${first.demo.apiKey}&sessionId=svc_poison2&contentId=room%ED%A0%80`, 'svc.v1'));
    const rawWelcome = await raw.next((m) => m.type === 'welcome');
    expect((rawWelcome.broadcast as { id: string }).id).toBe('room\ufffd\ufffd\ufffd');
    raw.close();

    const stored = await first.services.storage.events.queryEvents({ tenantSeq: first.demo.seq, userId: 'poisoner' }, { limit: 10 });
    expect(stored.map((e) => e.eventId).sort()).toEqual(Object.values(ids).sort());
    for (const event of stored) expect(event.data).toEqual(MENDED);

    await first.close();
    const second = await start(first);
    await expectServiceWorks(second, 'poisoned-room', 'poisoner');
  }, 60_000);

  it('starts, rolls up, erases, exports and loads rooms when an older version stored an unreadable row, setting it aside once', async () => {
    const first = await start();
    await first.close();
    const { pending, derived } = await plantPoisonedRows(first.services.config.dataDir, first.demo.seq);

    const second = await start(first);
    await expectServiceWorks(second, 'poisoned-room', 'poisoner');
    const metrics = await second.app.inject({ url: '/metrics' });
    expect(withoutNodeLabel(metrics.body)).toMatch(/^svc_undecodable_rows_total 2$/m);
    const logged = second.logs.filter((line) => line.includes('stored event set aside'));
    expect(logged.filter((line) => line.includes(pending))).toHaveLength(1);
    expect(logged.filter((line) => line.includes(derived))).toHaveLength(1);

    // And again: nothing left to trip over, nothing logged twice.
    await second.close();
    const third = await start(second);
    await expectServiceWorks(third, 'poisoned-room', 'poisoner');
    expect(third.logs.filter((line) => line.includes('stored event set aside'))).toEqual([]);
  }, 60_000);

  it('lets `svc serve` and the CLI start on a database holding an unreadable row', async () => {
    const first = await start();
    await first.close();
    const { pending } = await plantPoisonedRows(first.services.config.dataDir, first.demo.seq);
    const env = { SVC_DATA_DIR: first.services.config.dataDir };
    const listed = await runSvc(['tenants', 'list'], env);
    expect(listed.exit, listed.output).toBe(0);
    expect(listed.output).toContain(`stored event ${pending} of tenant ${first.demo.seq} set aside`);
    const server = await startChildServer(env);
    try {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      const overview = await fetch(`${server.url}/v1/analytics/overview`, { headers: { authorization: `Bearer ${first.demo.adminToken}` } });
      expect(overview.status).toBe(200);
    } finally {
      server.process.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
  }, 60_000);
});
