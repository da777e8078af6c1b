import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { backendStates, freePort, HAPROXY_SOCKET } from '@svc/engines';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBatch, sendUntilAcknowledged, exportedIdsNdjson, type Batch } from './cluster-client';
import { clusterEnginesAvailable, haproxyAvailable } from './cluster-engines';
import { runSvc, SVC_BIN, until } from './child-server';
import { TestViewer } from './ws-client';

/** How long `svc cluster up` has to print its URL: engines, three nodes, sample data, HAProxy. */
const START_WAIT_MS = 240_000;

/** `svc cluster up` run as a user runs it, in a process group of its own as a terminal would. */
interface RunningCommand {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | string | null>;
}

function runClusterUp(port: number, extraArgs: string[] = []): RunningCommand {
  const child = spawn(process.execPath, [SVC_BIN, 'cluster', 'up', '--port', String(port), ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | string | null>((resolve) => child.once('close', (code, signal) => resolve(signal ?? code)));
  return { child, output: () => output, exited };
}

/** Resolves once the command printed its ready line; fails with its output if it exits first. */
async function untilReady(command: RunningCommand): Promise<void> {
  await until('the cluster ready line', async () => {
    if (command.child.exitCode !== null) throw new Error(`svc cluster up exited:\n${command.output()}`);
    return command.output().includes('Press Ctrl-C to stop everything.');
  }, START_WAIT_MS);
}

/** Whether the process lives (a zombie does not). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Pids of live processes whose command line names `text`. */
function processesNaming(text: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text) && alive(Number(name));
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('svc cluster up without an engine', () => {
  it('names the missing engine and prints the one apt-get line, with a non-zero exit and nothing started', async () => {
    const run = await runSvc(['cluster', 'up', '--port', String(await freePort())], { SVC_HAPROXY_BIN: '/nonexistent/haproxy' });
    expect(run.exit).toBe(1);
    expect(run.output).toContain('Missing: HAProxy (/nonexistent/haproxy).');
    expect(run.output).toMatch(/^ {2}apt-get install -y haproxy$/m);
    expect(run.output).not.toContain('Starting');
  }, 60_000);

  it('names every missing engine in one apt-get line', async () => {
    const run = await runSvc(['cluster', 'up'], {
      SVC_HAPROXY_BIN: '/nonexistent/haproxy',
      SVC_NATS_SERVER_BIN: '/nonexistent/nats-server',
      SVC_CLICKHOUSE_SERVER_BIN: '/nonexistent/clickhouse-server',
      SVC_POSTGRES_BIN_DIR: '/nonexistent/postgresql/15/bin',
    });
    expect(run.exit).toBe(1);
    expect(run.output).toContain('Missing: PostgreSQL 15 (/nonexistent/postgresql/15/bin/postgres), NATS server (/nonexistent/nats-server), ClickHouse server (/nonexistent/clickhouse-server), HAProxy (/nonexistent/haproxy).');
    expect(run.output).toMatch(/^ {2}apt-get install -y postgresql-15 nats-server clickhouse-server clickhouse-client haproxy$/m);
  }, 60_000);
});

describe.runIf(clusterEnginesAvailable() && haproxyAvailable())('svc cluster up on a port in use', () => {
  it('says so and starts nothing', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const run = await runSvc(['cluster', 'up', '--port', String(port)], {});
      expect(run.exit).toBe(1);
      expect(run.output).toContain(`Port ${port} on 127.0.0.1 is in use: choose another with --port.`);
      expect(run.output).not.toContain('Starting');
    } finally {
      taken.close();
    }
  }, 60_000);
});

describe.runIf(clusterEnginesAvailable() && haproxyAvailable())('svc cluster up (npm run cluster)', () => {
  let command: RunningCommand;
  let url = '';
  let apiKey = '';
  let adminToken = '';
  let dataDir = '';
  let pids = new Map<string, number>();

  beforeAll(async () => {
    command = runClusterUp(await freePort());
    await untilReady(command);
    const text = command.output();
    url = /^Svc cluster ready at (\S+)$/m.exec(text)![1]!;
    apiKey = /^ {2}API key: +(\S+)$/m.exec(text)![1]!;
    adminToken = /^ {2}Admin token: +(\S+)$/m.exec(text)![1]!;
    dataDir = /^Data in (\S+) \(temporary/m.exec(text)![1]!;
    pids = new Map(/^Processes: (.*)$/m.exec(text)![1]!.split(' ').map((entry) => entry.split('=') as [string, string]).map(([name, pid]) => [name, Number(pid)]));
  }, START_WAIT_MS + 10_000);

  afterAll(async () => {
    // Only when a test failed before the command was stopped: leave nothing running.
    if (command?.child.exitCode === null && command.child.signalCode === null) process.kill(-command.child.pid!, 'SIGKILL');
    for (const pid of pids.values()) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  const admin = () => ({ authorization: `Bearer ${adminToken}` });

  it('prints the URL, the credentials and every process it started', () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(apiKey).toMatch(/^svc_pk_[0-9A-Za-z]{32}$/);
    expect(adminToken).toMatch(/^svc_sk_[0-9A-Za-z]{32}$/);
    expect(command.output()).toContain(`Demo page:   ${url}/demo`);
    expect([...pids.keys()].sort()).toEqual(['clickhouse', 'haproxy', 'nats-1', 'nats-2', 'nats-3', 'node-1', 'node-2', 'node-3', 'postgres']);
    for (const pid of pids.values()) expect(alive(pid)).toBe(true);
  });

  it('puts every node behind the load balancer, each checked by /readyz', async () => {
    const up = expect.stringMatching(/^UP/);
    expect(await backendStates(join(dataDir, 'haproxy', HAPROXY_SOCKET))).toEqual({ 'node-1': up, 'node-2': up, 'node-3': up });
    const config = readFileSync(join(dataDir, 'haproxy', 'haproxy.cfg'), 'utf8');
    expect(config).toContain('option httpchk GET /readyz');
  });

  it('serves /readyz, the dashboard, /demo, ingest, a WebSocket viewer and svc simulate through the load balancer', async () => {
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const dashboard = await fetch(`${url}/`);
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toContain('<title>Svc dashboard</title>');
    const signIn = await fetch(`${url}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: adminToken }) });
    expect(signIn.status, await signIn.clone().text()).toBeLessThan(300);
    const demo = await fetch(`${url}/demo`);
    expect(demo.status).toBe(200);
    expect(await demo.text()).toContain(`data-api-key="${apiKey}"`);

    // The demo tenant holds its sample data.
    const overview = await fetch(`${url}/v1/analytics/overview`, { headers: admin() });
    expect(overview.status).toBe(200);

    const batch = makeBatch(50, (i) => `up-user-${i}`);
    const answer = await sendUntilAcknowledged(() => [url], batch, 60_000, apiKey);
    expect(answer.accepted).toBe(50);

    const viewer = await TestViewer.connect(url, { apiKey, sessionId: 'svc_clusterupviewer', contentId: 'demo-live' });
    const welcome = await viewer.next((m) => m.type === 'welcome', 15_000);
    expect(welcome.type).toBe('welcome');
    const ack = await viewer.request({ type: 'track', events: [{ event: 'broadcast.joined', timestamp: new Date().toISOString(), data: {} }] }, 15_000);
    expect(ack.type).toBe('ack');
    viewer.close();

    const simulate = await runSvc(['simulate', '--url', url, '--api-key', apiKey, '--viewers', '8', '--seconds', '3', '--activity', '1'], {});
    expect(simulate.exit, simulate.output).toBe(0);
    const result = JSON.parse(simulate.output.trim().split('\n').pop()!) as { viewers: number; events: number; acknowledged: number; unacknowledged: number; failedJoins: number; errorCodes: Record<string, number> };
    expect(result, simulate.output).toMatchObject({ viewers: 8, failedJoins: 0, unacknowledged: 0 });
    expect(result.acknowledged).toBe(result.events);
    // The demo changes scenes every 20 s: a vote or entry that crossed its overlay's hide (or its
    // closing time) on the way is refused, rightly; nothing else may be.
    expect(Object.keys(result.errorCodes).filter((code) => !['overlay_not_active', 'poll_closed', 'contest_closed'].includes(code)), simulate.output).toEqual([]);

    // Everything becomes readable through the load balancer: the batch, the viewer's and the simulated viewers' joins.
    const ids = new Set(batch.map((event) => event.eventId as string));
    await until('the batch readable', async () => (await exportedIdsNdjson(url, '', admin())).filter((id) => ids.has(id)).length === ids.size, 60_000);
    await until('the simulated viewers readable', async () => {
      const response = await fetch(`${url}/v1/analytics/events?format=ndjson&broadcastId=demo-live&event=broadcast.joined`, { headers: admin() });
      const sessions = (await response.text()).split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { sessionId: string }).sessionId);
      return sessions.filter((id) => id.startsWith('svc_sim')).length >= 8 && sessions.includes('svc_clusterupviewer');
    }, 60_000);
  }, 120_000);

  it('goes on taking events with nothing lost when a node is SIGKILLed: the load balancer takes it out by its health check', async () => {
    const started = Date.now();
    const sent: Batch[] = [];
    for (let i = 0; i < 30; i++) {
      if (i === 5) process.kill(pids.get('node-2')!, 'SIGKILL');
      const batch = makeBatch(100, (j) => `kill-user-${i}-${j}`);
      sent.push(batch);
      await sendUntilAcknowledged(() => [url], batch, 60_000, apiKey);
    }
    expect(alive(pids.get('node-2')!)).toBe(false);
    const socket = join(dataDir, 'haproxy', HAPROXY_SOCKET);
    await until('HAProxy marks node-2 down', async () => (await backendStates(socket))['node-2'] === 'DOWN', 10_000);
    // `UP` or `UP n/3` (a check failed on this busy machine, not yet taken out): in the rotation.
    expect(await backendStates(socket)).toEqual({ 'node-1': expect.stringMatching(/^UP/), 'node-2': 'DOWN', 'node-3': expect.stringMatching(/^UP/) });
    // Out of the rotation, the dead node gets no request: every one of these is answered.
    for (let i = 0; i < 20; i++) expect((await fetch(`${url}/readyz`)).status).toBe(200);

    const ids = new Set(sent.flat().map((event) => event.eventId as string));
    let exported: string[] = [];
    await until('every acknowledged event exported', async () => {
      exported = (await exportedIdsNdjson(url, '', admin())).filter((id) => ids.has(id));
      return exported.length >= ids.size;
    }, 90_000);
    console.log(`3,000 events through the load balancer, node-2 killed after 500: all exported ${Date.now() - started} ms after the first was sent`);
    expect(exported.length).toBe(3_000);
    expect(new Set(exported).size).toBe(3_000);
  }, 180_000);

  it('runs svc simulate --check as printed while a node is SIGKILLed: its viewers resume on another node, every acknowledged event is stored once', async () => {
    const [, token, args] = /^ {2}Simulate: +SVC_ADMIN_TOKEN=(\S+) npm run svc -- (.*)$/m.exec(command.output())!;
    expect(token).toBe(adminToken);
    const line = args!.split(' ');
    expect(line).toEqual(['simulate', '--url', url, '--api-key', apiKey, '--check']);
    const simulating = runSvc([...line, '--viewers', '12', '--seconds', '12', '--activity', '1'], { SVC_ADMIN_TOKEN: token! });
    // Once the viewers are on (HAProxy spreads them over node-1 and node-3: the viewer count sums the nodes'), node-3 dies.
    const watcher = await TestViewer.connect(url, { apiKey, sessionId: 'svc_clusterupwatcher', contentId: 'demo-live' });
    await watcher.next((m) => m.type === 'viewers' && Number(m.count) >= 13, 60_000);
    watcher.close();
    process.kill(pids.get('node-3')!, 'SIGKILL');
    const done = await simulating;
    expect(done.exit, done.output).toBe(0);
    const result = JSON.parse(done.output.trim().split('\n').pop()!) as { reconnects: number; resumed: number; unacknowledged: number; failedJoins: number; acknowledged: number; events: number; check: Record<string, number> };
    expect(result.reconnects).toBeGreaterThan(0);
    expect(result.resumed).toBe(result.reconnects);
    expect(result.unacknowledged).toBe(0);
    expect(result.failedJoins).toBe(0);
    expect(result.acknowledged).toBe(result.events);
    expect(result.check).toMatchObject({ checked: result.acknowledged, missing: 0, repeated: 0 });
  }, 180_000);

  it('stops everything on Ctrl-C (SIGINT): nodes drained, engines stopped, no process left, the temporary folder removed', async () => {
    expect(existsSync(dataDir)).toBe(true);
    const viewer = await TestViewer.connect(url, { apiKey, sessionId: 'svc_clusterupdrain', contentId: 'demo-live' });
    await viewer.next((m) => m.type === 'welcome', 15_000);
    // A terminal's Ctrl-C goes to the foreground process group.
    process.kill(-command.child.pid!, 'SIGINT');
    // The nodes drain before the load balancer stops: its viewer hears "going away" (1001), not a cut line (1006).
    expect((await viewer.closed).code).toBe(1001);
    expect(await command.exited).toBe(0);
    expect(command.output()).toContain('Stopped.');
    for (const [name, pid] of pids) expect(alive(pid), name).toBe(false);
    expect(processesNaming(dataDir)).toEqual([]);
    expect(existsSync(dataDir)).toBe(false);
  }, 90_000);
});

describe.runIf(clusterEnginesAvailable() && haproxyAvailable())('svc cluster up --data <dir>', () => {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'svc-cluster-up-test-')), 'kept');
  // PostgreSQL runs as its own OS user when the tests run as root: it must get through.
  chmodSync(dirname(dataDir), 0o711);
  const commands: RunningCommand[] = [];
  afterAll(async () => {
    for (const command of commands) if (command.child.exitCode === null && command.child.signalCode === null) process.kill(-command.child.pid!, 'SIGKILL');
    rmSync(dirname(dataDir), { recursive: true, force: true });
  });

  it('keeps the data folder on Ctrl-C and starts on it again with the same credentials and events', async () => {
    const first = runClusterUp(await freePort(), ['--data', dataDir]);
    commands.push(first);
    await untilReady(first);
    expect(first.output()).toContain(`Data in ${dataDir} (kept)`);
    const url = /^Svc cluster ready at (\S+)$/m.exec(first.output())![1]!;
    const apiKey = /^ {2}API key: +(\S+)$/m.exec(first.output())![1]!;
    const adminToken = /^ {2}Admin token: +(\S+)$/m.exec(first.output())![1]!;
    const batch = makeBatch(20, (i) => `kept-user-${i}`);
    await sendUntilAcknowledged(() => [url], batch, 60_000, apiKey);
    const ids = new Set(batch.map((event) => event.eventId as string));
    const ours = async (at: string) => (await exportedIdsNdjson(at, '', { authorization: `Bearer ${adminToken}` })).filter((id) => ids.has(id)).length;
    await until('the batch readable', async () => (await ours(url)) === 20, 60_000);
    process.kill(-first.child.pid!, 'SIGINT');
    expect(await first.exited).toBe(0);
    expect(existsSync(join(dataDir, 'postgres'))).toBe(true);

    const second = runClusterUp(await freePort(), ['--data', dataDir]);
    commands.push(second);
    await untilReady(second);
    expect(second.output()).toContain(`API key:     ${apiKey}`);
    expect(second.output()).toContain(`Admin token: ${adminToken}`);
    // The demo tenant exists: no second load of its sample data.
    expect(second.output()).not.toContain('sample data');
    const secondUrl = /^Svc cluster ready at (\S+)$/m.exec(second.output())![1]!;
    expect(await ours(secondUrl)).toBe(20);
    process.kill(-second.child.pid!, 'SIGINT');
    expect(await second.exited).toBe(0);
    expect(existsSync(join(dataDir, 'clickhouse'))).toBe(true);
  }, 2 * START_WAIT_MS);
});
