import { execFileSync } from 'node:child_process';
import { chmodSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { uuidv7 } from 'uuidv7';
import { DATABASE_FILE_NAME, openEmbeddedStorage } from '@svc/storage';
import { runSvc, startChildServer, type ChildOptions, type ChildServer } from './child-server';
import { validEvent } from './events-fixture';
import { ADMIN_TOKEN, API_KEY, tempDataDir } from './test-app';
import { withoutNodeLabel } from './prometheus-text';

const EVENTS_PER_REQUEST = 500;
/** Room the WAL gets past the database file's size before writes fail with EFBIG. */
const WAL_ROOM_KIB = 256;

const envFor = (dataDir: string) => ({ SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_API_KEY: API_KEY, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN });

/**
 * chmod stops nobody running as root; there the child runs as `nobody` (uid 65534) so that the
 * permissions really apply, as they do for a service account in production.
 */
function readOnlyOptions(): ChildOptions {
  return process.getuid?.() === 0 ? { user: { uid: 65_534, gid: 65_534 } } : {};
}

async function post(url: string, events: Record<string, unknown>[]): Promise<Response> {
  return fetch(`${url}/v1/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-api-key': API_KEY },
    body: JSON.stringify({ events }),
  });
}

async function storedIds(dataDir: string): Promise<Set<string>> {
  const storage = await openEmbeddedStorage(dataDir);
  try {
    return new Set((await storage.events.queryEvents({ tenantSeq: 1 }, { limit: 10_000_000 })).map((e) => e.eventId));
  } finally {
    await storage.close();
  }
}

/** Creates the database of a data folder with a clean stop, so that no WAL is left. */
async function createDatabase(dataDir: string): Promise<void> {
  const storage = await openEmbeddedStorage(dataDir);
  await storage.close();
}

describe('storage faults', () => {
  const children: ChildServer[] = [];
  const readOnly: string[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.process.kill('SIGKILL');
    for (const dir of readOnly.splice(0)) {
      chmodSync(dir, 0o755);
      chmodSync(join(dir, DATABASE_FILE_NAME), 0o644);
    }
  });

  it('refuses to start on a read-only data folder, with one line naming the folder', async () => {
    const dataDir = tempDataDir();
    await createDatabase(dataDir);
    chmodSync(join(dataDir, DATABASE_FILE_NAME), 0o444);
    chmodSync(dataDir, 0o555);
    readOnly.push(dataDir);
    const { exit, output } = await runSvc(['serve'], envFor(dataDir), readOnlyOptions());
    expect(exit).not.toBe(0);
    const lines = output.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^svc: The data folder .* cannot be used: .*[Pp]ermission denied/);
    expect(lines[0]).toContain(dataDir);
  }, 30_000);

  it('refuses to start when the disk takes no more data, with one line naming the folder', async () => {
    const dataDir = tempDataDir();
    const { exit, output } = await runSvc(['serve'], envFor(dataDir), { fileSizeLimitKiB: 16 });
    expect(exit).not.toBe(0);
    const lines = output.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^svc: The data folder .* cannot be used: .*File too large/);
    expect(lines[0]).toContain(dataDir);
  }, 30_000);

  it('answers 503 storage_unavailable instead of acknowledging while the disk is full, and recovers', async () => {
    const dataDir = tempDataDir();
    await createDatabase(dataDir);
    const limitKiB = Math.ceil(statSync(join(dataDir, DATABASE_FILE_NAME)).size / 1024) + WAL_ROOM_KIB;
    const server = await startChildServer(envFor(dataDir), 20_000, { fileSizeLimitKiB: limitKiB });
    children.push(server);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);

    const acknowledged = new Set<string>();
    let refused: Response | null = null;
    let refusedBody: Record<string, unknown> = {};
    let refusedEvents: Record<string, unknown>[] = [];
    for (let i = 0; i < 400 && !refused; i++) {
      const events = Array.from({ length: EVENTS_PER_REQUEST }, () => validEvent('poll.voted', new Date(), { eventId: uuidv7() }));
      const response = await post(server.url, events);
      if (response.ok) for (const e of events) acknowledged.add(String(e.eventId));
      else {
        refused = response;
        refusedBody = (await response.json()) as Record<string, unknown>;
        refusedEvents = events;
      }
    }
    // The limit was reached: the write failed and was answered as such.
    expect(refused?.status).toBe(503);
    expect(refused?.headers.get('content-type')).toContain('application/problem+json');
    expect(refused?.headers.get('retry-after')).toBe('5');
    expect(refusedBody).toMatchObject({ status: 503, code: 'storage_unavailable' });
    expect(acknowledged.size).toBeGreaterThan(0);

    // Not ready while writes fail; still alive.
    const notReady = await fetch(`${server.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(((await notReady.json()) as { code: string }).code).toBe('storage_unavailable');
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // A refused write leaves the WAL as it was, so the same request is refused again.
    expect((await post(server.url, refusedEvents)).status).toBe(503);
    // Operators see it on /metrics (the first refusal, the repeat, and the readiness probe's).
    const metrics = withoutNodeLabel(await (await fetch(`${server.url}/metrics`)).text());
    expect(Number(/^svc_storage_refused_writes_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2);

    // Space comes back: readiness and ingestion recover without a restart.
    execFileSync('prlimit', ['--pid', String(server.process.pid), '--fsize=unlimited']);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const recovered = await post(server.url, refusedEvents);
    expect(recovered.status).toBe(200);
    expect(((await recovered.json()) as { accepted: number }).accepted).toBe(EVENTS_PER_REQUEST);
    for (const e of refusedEvents) acknowledged.add(String(e.eventId));

    server.process.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const stored = await storedIds(dataDir);
    expect([...acknowledged].filter((id) => !stored.has(id))).toEqual([]);
  }, 60_000);
});
