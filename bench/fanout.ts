import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import type { ClientCommand, ClientReport } from './fanout-client';
import { base62, scrapeCommits, type CommitSample } from './ingest';
import { percentile } from './load';
import { cpuSeconds, spawnTracked, startServer, startService, tempFolder, type Child, READY_LINE, ROOT } from './processes';
import { fmt, type BenchTable, type Row } from './report';

/** The issue's targets: viewers held by one server process, and show latency against the bare baseline. */
export const TARGET_VIEWERS = 18_000;
export const TARGET_P99_VS_BASELINE = 1.5;

export interface FanoutOptions {
  /** Connections to open to each server, spread over the client processes. */
  viewers: number;
  clientProcesses: number;
  /** Connections being opened at once, over all client processes. */
  wave: number;
  /** Show/hide cycles per server; the table shows the median cycle figures. */
  cycles: number;
  /** Cycles (of the service) followed by a vote burst, each on its own fresh poll. */
  voteRounds: number;
  log: (line: string) => void;
}

const BROADCAST = 'bench-fanout';
const POLL = { type: 'poll', question: 'Who scores the next goal?', options: ['Home team', 'Away team', 'Nobody', 'Both'] };
const SHOW_PREFIX = '{"type":"overlay.show"';
const HIDE_PREFIX = '{"type":"overlay.hide"';
const CONNECT_TIMEOUT_MS = 240_000;
const FRAME_TIMEOUT_MS = 30_000;
const VOTE_TIMEOUT_MS = 60_000;

/** CLOCK_MONOTONIC in ms, the clock the client processes stamp arrivals with. */
const now = () => Number(process.hrtime.bigint() / 1000n) / 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** VmRSS / VmHWM of a process in KiB, from /proc; NaN where missing. */
function memoryKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

type ReportOf<T extends ClientReport['type']> = Extract<ClientReport, { type: T }>;

interface Waiter {
  match: (report: ClientReport) => boolean;
  resolve: (report: ClientReport | null) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** The client processes (bench/fanout-client.ts), driven over their IPC channels. */
class ClientGroup {
  private readonly waiters: Waiter[][];
  private readonly outputs: string[];
  readonly progress: { open: number; failed: number }[];

  private constructor(private readonly children: ChildProcess[]) {
    this.waiters = children.map(() => []);
    this.outputs = children.map(() => '');
    this.progress = children.map(() => ({ open: 0, failed: 0 }));
    children.forEach((child, i) => {
      const keep = (chunk: Buffer) => (this.outputs[i] = (this.outputs[i] + chunk.toString()).slice(-4_000));
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      child.on('message', (raw) => this.dispatch(i, raw as ClientReport));
      // A send to a process that is gone: its exit (below) fails the waiting call.
      child.on('error', () => undefined);
      child.once('exit', (code, signal) => {
        const error = new Error(`client process ${i} exited (${signal ?? code}):\n${this.outputs[i]}`);
        for (const waiter of this.waiters[i]!.splice(0)) {
          clearTimeout(waiter.timer);
          waiter.reject(error);
        }
      });
    });
  }

  static async start(count: number): Promise<ClientGroup> {
    const children = Array.from({ length: count }, () =>
      spawnTracked(process.execPath, ['--import', 'tsx', 'bench/fanout-client.ts'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] }),
    );
    const group = new ClientGroup(children);
    await group.all('ready', () => true, 60_000, 'start');
    return group;
  }

  get size(): number {
    return this.children.length;
  }

  /** `fn` of each client's index. */
  map<T>(fn: (i: number) => T): T[] {
    return this.children.map((_, i) => fn(i));
  }

  private dispatch(i: number, report: ClientReport): void {
    if (report.type === 'progress') this.progress[i] = { open: report.open, failed: report.failed };
    const list = this.waiters[i]!;
    const index = list.findIndex((w) => w.match(report));
    if (index < 0) return;
    const [waiter] = list.splice(index, 1);
    clearTimeout(waiter!.timer);
    waiter!.resolve(report);
  }

  send(i: number, command: ClientCommand): void {
    this.children[i]!.send(command);
  }

  sendAll(command: ClientCommand): void {
    for (let i = 0; i < this.children.length; i++) this.send(i, command);
  }

  /** The next report of this type from client `i` that passes `filter`; null after `timeoutMs`. */
  next<T extends ClientReport['type']>(i: number, type: T, filter: (r: ReportOf<T>) => boolean, timeoutMs: number): Promise<ReportOf<T> | null> {
    return new Promise<ReportOf<T> | null>((resolve, reject) => {
      const list = this.waiters[i]!;
      const waiter: Waiter = {
        match: (r) => r.type === type && filter(r as ReportOf<T>),
        resolve: (r) => resolve(r as ReportOf<T> | null),
        reject,
        timer: setTimeout(() => {
          list.splice(list.indexOf(waiter), 1);
          resolve(null);
        }, timeoutMs),
      };
      list.push(waiter);
    });
  }

  /** One report of this type from every client; throws when one does not answer in time. */
  async all<T extends ClientReport['type']>(type: T, filter: (r: ReportOf<T>) => boolean, timeoutMs: number, what: string): Promise<ReportOf<T>[]> {
    const reports = await Promise.all(this.children.map((_, i) => this.next(i, type, filter, timeoutMs)));
    if (reports.some((r) => r === null)) throw new Error(`client processes did not answer "${what}" within ${timeoutMs} ms`);
    return reports as ReportOf<T>[];
  }

  cpuSeconds(): number {
    return this.children.reduce((sum, child) => sum + cpuSeconds(child.pid ?? -1), 0);
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            try {
              child.send({ cmd: 'exit' } satisfies ClientCommand);
            } catch {
              child.kill('SIGKILL');
            }
          }),
      ),
    );
  }
}

/** What one server does for the benchmark; the service and the bare baseline differ only here. */
interface Target {
  name: string;
  child: Child;
  /** ws://…/v1/ws?… without sessionId. */
  viewerUrl: string;
  welcomePrefix: string;
  /** Before a cycle (not timed): the service creates a fresh poll; both warm the admin connection. */
  prepare(cycle: number): Promise<string>;
  /** The timed trigger: resolves when the server answered, with how long its send loop took when it says. */
  show(overlayId: string): Promise<number | undefined>;
  hide(overlayId: string): Promise<number | undefined>;
  stop(): Promise<void>;
}

async function post(url: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  const response = await request(url, { method: 'POST', headers, body });
  return { status: response.statusCode, text: await response.body.text() };
}

async function startServiceTarget(): Promise<Target> {
  const dataDir = tempFolder('svc-bench-fanout-');
  const apiKey = `svc_pk_${base62(32)}`;
  const adminToken = `svc_sk_${base62(32)}`;
  let child: Child;
  try {
    // Each client process stands for thousands of viewers from one address: lift the per-address limits.
    child = await startService(dataDir.path, {
      SVC_BOOTSTRAP_API_KEY: apiKey,
      SVC_BOOTSTRAP_ADMIN_TOKEN: adminToken,
      SVC_WS_MAX_CONNECTIONS_PER_ADDRESS: '100000',
      SVC_WS_UPGRADES_PER_ADDRESS: '0',
    });
  } catch (error) {
    dataDir.remove();
    throw error;
  }
  const json = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
  const bare = { authorization: `Bearer ${adminToken}` };
  const admin = async (path: string, expected: number, body?: object) => {
    const answer = await post(child.url + path, body ? json : bare, body ? JSON.stringify(body) : undefined);
    if (answer.status !== expected) throw new Error(`POST ${path}: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
    return JSON.parse(answer.text) as { id: string };
  };
  const target: Target = {
    name: 'service',
    child,
    viewerUrl: `${child.url.replace('http:', 'ws:')}/v1/ws?apiKey=${apiKey}&contentId=${BROADCAST}`,
    welcomePrefix: '{"type":"welcome"',
    prepare: async () => (await admin(`/v1/broadcasts/${BROADCAST}/overlays`, 201, POLL)).id,
    show: async (id) => void (await admin(`/v1/broadcasts/${BROADCAST}/overlays/${id}/show`, 200)),
    hide: async (id) => void (await admin(`/v1/broadcasts/${BROADCAST}/overlays/${id}/hide`, 200)),
    async stop() {
      try {
        await child.stop(30_000);
      } finally {
        dataDir.remove();
      }
    },
  };
  try {
    await admin('/v1/broadcasts', 201, { id: BROADCAST, campaignId: 1 });
  } catch (error) {
    await target.stop();
    throw error;
  }
  return target;
}

async function startBaselineTarget(showFrame: string, hideFrame: string): Promise<Target> {
  const child = await startServer({
    name: 'bare ws server',
    command: process.execPath,
    args: ['--import', 'tsx', 'bench/bare-ws-server.ts'],
    cwd: ROOT,
    env: { PORT: '0' },
    readyLine: READY_LINE,
  });
  const send = async (frame: string) => {
    const answer = await post(`${child.url}/send`, { 'content-type': 'application/json' }, frame);
    if (answer.status !== 200) throw new Error(`POST /send: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
    return (JSON.parse(answer.text) as { loopMs: number }).loopMs;
  };
  return {
    name: 'baseline',
    child,
    // The same query length as the service's, so the handshakes are the same size.
    viewerUrl: `${child.url.replace('http:', 'ws:')}/v1/ws?apiKey=svc_pk_${base62(32)}&contentId=${BROADCAST}`,
    welcomePrefix: '{"type":"welcome"',
    async prepare() {
      // Warms the keep-alive connection as the service's poll creation does (answered 404).
      const response = await request(`${child.url}/warm`);
      await response.body.dump();
      return '';
    },
    show: () => send(showFrame),
    hide: () => send(hideFrame),
    stop: () => child.stop(5_000),
  };
}

/** A frame of the same shape and size as the service's overlay.show, for when none was captured. */
function syntheticShowFrame(): string {
  const at = new Date().toISOString();
  return JSON.stringify({
    type: 'overlay.show',
    overlay: { ...POLL, id: `ov_${base62(26)}`, broadcastId: BROADCAST, active: true, createdAt: at, updatedAt: at },
  });
}

interface Cycle {
  /** Show (or hide) → receipt per client, ms, sorted. */
  latencies: Float64Array;
  /** Open connections that never got the frame. */
  missing: number;
  /** Show → HTTP answer of the trigger, ms. */
  answerMs: number;
  /** Server CPU used from the trigger to the last receipt, ms. */
  serverCpuMs: number;
  /** CPU of all client processes over the same time, ms. */
  clientCpuMs: number;
  /** The server's own send loop, ms, when it reports it (the baseline does). */
  loopMs?: number;
  bytes: number;
}

interface VoteRound {
  votes: number;
  acked: number;
  errors: number;
  missing: number;
  /** From the first vote sent to the last ack. */
  seconds: number;
  /** From the first vote sent to the last one sent by the clients. */
  sendSeconds: number;
  /** From the first vote sent to the first ack, and to the median ack. */
  firstAckSeconds: number;
  medianAckSeconds: number;
  /** Group commits (from the service's /metrics) during the round, and the events they carried. */
  commits: number;
  commitEvents: number;
  /** CPU of the server's main JavaScript thread from the first vote sent to the last ack, ms. */
  mainThreadMs: number;
  /** Server VmRSS once every vote is acked, KiB. */
  rssAfterKiB: number;
  errorSamples: string[];
}

interface TargetRun {
  name: string;
  asked: number;
  connected: number;
  failedConnections: number;
  failureSamples: string[];
  connectSeconds: number;
  connectCpuSeconds: number;
  rssBeforeKiB: number;
  rssAfterKiB: number;
  rssPeakKiB: number;
  shows: Cycle[];
  hides: Cycle[];
  votes: VoteRound[];
  heldAtEnd: number;
  drops: number;
  dropSamples: string[];
  clientCpuSeconds: number;
  /** The first show after connecting, not counted in the figures. */
  warmUp?: Cycle;
}

/** Arms every client for `prefix`, runs `trigger`, and collects the receive times. */
async function timeFrame(clients: ClientGroup, target: Target, seq: number, prefix: string, capture: boolean, trigger: () => Promise<number | undefined>) {
  clients.sendAll({ cmd: 'arm', seq, prefix, capture });
  await clients.all('armed', (r) => r.seq === seq, 10_000, 'arm');
  const arrivals = clients.map((i) => clients.next(i, 'arrivals', (r) => r.seq === seq, FRAME_TIMEOUT_MS));
  const cpu0 = cpuSeconds(target.child.pid);
  const clientCpu0 = clients.cpuSeconds();
  const sent = now();
  const loopMs = await trigger();
  const answered = now();
  let reports = await Promise.all(arrivals);
  const cpu1 = cpuSeconds(target.child.pid);
  const clientCpu1 = clients.cpuSeconds();
  if (reports.some((r) => r === null)) {
    // Some clients are still waiting for frames: take what they have.
    reports = await Promise.all(
      reports.map((r, i) => {
        if (r) return r;
        const late = clients.next(i, 'arrivals', (x) => x.seq === seq, 10_000);
        clients.send(i, { cmd: 'collect', seq });
        return late;
      }),
    );
  }
  if (reports.some((r) => r === null)) throw new Error('client processes did not report arrivals');
  const times = reports.flatMap((r) => r!.times);
  const cycle: Cycle = {
    latencies: Float64Array.from(times, (t) => t - sent).sort(),
    missing: reports.reduce((sum, r) => sum + r!.missing, 0),
    answerMs: answered - sent,
    serverCpuMs: (cpu1 - cpu0) * 1000,
    clientCpuMs: (clientCpu1 - clientCpu0) * 1000,
    loopMs,
    bytes: Math.max(...reports.map((r) => r!.bytes)),
  };
  return { cycle, sample: reports.find((r) => r!.sample)?.sample };
}

async function voteRound(clients: ClientGroup, server: Child, seq: number, pollId: string, viewers: number): Promise<VoteRound> {
  const commits0: CommitSample = await scrapeCommits(server.url);
  const main0 = cpuSeconds(server.pid, server.pid);
  const waits = clients.map((i) => clients.next(i, 'votes', (r) => r.seq === seq, VOTE_TIMEOUT_MS));
  const start = now();
  clients.sendAll({ cmd: 'vote', seq, pollId, options: POLL.options.length });
  let reports = await Promise.all(waits);
  if (reports.some((r) => r === null)) {
    reports = await Promise.all(
      reports.map((r, i) => {
        if (r) return r;
        const late = clients.next(i, 'votes', (x) => x.seq === seq, 10_000);
        clients.send(i, { cmd: 'collectVotes', seq });
        return late;
      }),
    );
  }
  if (reports.some((r) => r === null)) throw new Error('client processes did not report votes');
  const main1 = cpuSeconds(server.pid, server.pid);
  const rssAfterKiB = memoryKiB(server.pid, 'VmRSS');
  const commits1 = await scrapeCommits(server.url);
  const acks = reports.flatMap((r) => r!.ackTimes).sort((a, b) => a - b);
  const last = acks.length ? acks[acks.length - 1]! : start;
  return {
    votes: viewers,
    acked: acks.length,
    errors: reports.reduce((sum, r) => sum + r!.errors, 0),
    missing: reports.reduce((sum, r) => sum + r!.missing, 0),
    seconds: (last - start) / 1000,
    sendSeconds: (Math.max(...reports.map((r) => r!.lastSent)) - start) / 1000,
    firstAckSeconds: acks.length ? (acks[0]! - start) / 1000 : Number.NaN,
    medianAckSeconds: acks.length ? (acks[Math.floor((acks.length - 1) / 2)]! - start) / 1000 : Number.NaN,
    errorSamples: [...new Set(reports.flatMap((r) => r!.errorSamples))].slice(0, 3),
    commits: commits1.count - commits0.count,
    commitEvents: commits1.events - commits0.events,
    mainThreadMs: (main1 - main0) * 1000,
    rssAfterKiB,
  };
}

/**
 * One server with its client processes and every viewer connected, kept up between cycles so
 * that the service's and the baseline's cycles can alternate.
 */
class Side {
  private seq = 0;
  readonly shows: Cycle[] = [];
  readonly hides: Cycle[] = [];
  readonly votes: VoteRound[] = [];
  warmUp?: Cycle;
  showFrame?: string;
  hideFrame?: string;

  private constructor(
    readonly target: Target,
    readonly clients: ClientGroup,
    readonly connect: {
      connected: number;
      failed: number;
      failureSamples: string[];
      seconds: number;
      cpuSeconds: number;
      rssBeforeKiB: number;
      rssAfterKiB: number;
    },
    private readonly options: FanoutOptions,
  ) {}

  /** Starts the server and the client processes and connects every viewer, `run` picking the source addresses. */
  static async open(start: () => Promise<Target>, run: number, options: FanoutOptions): Promise<Side> {
    const log = options.log;
    const target = await start();
    let clients: ClientGroup | null = null;
    try {
      clients = await ClientGroup.start(options.clientProcesses);
      await sleep(1_000);
      const rssBeforeKiB = memoryKiB(target.child.pid, 'VmRSS');

      // Connect, in waves, each client process from its own loopback address.
      const perProcess = Math.ceil(options.viewers / clients.size);
      const wave = Math.max(1, Math.ceil(options.wave / clients.size));
      const connectedWait = clients.all('connected', () => true, CONNECT_TIMEOUT_MS, 'connect');
      const cpu0 = cpuSeconds(target.child.pid);
      const t0 = now();
      for (let i = 0; i < clients.size; i++) {
        clients.send(i, {
          cmd: 'connect',
          url: target.viewerUrl,
          count: Math.max(0, Math.min(perProcess, options.viewers - i * perProcess)),
          sessionPrefix: `svc_b${run}p${i}x`,
          localAddresses: [`127.0.${run}.${i + 2}`],
          wave,
          welcomePrefix: target.welcomePrefix,
        });
      }
      const group = clients;
      const ticker = setInterval(() => {
        const open = group.progress.reduce((s, p) => s + p.open, 0);
        const failed = group.progress.reduce((s, p) => s + p.failed, 0);
        log(`  ${target.name}: ${fmt.int(open)} open, ${fmt.int(failed)} failed, server RSS ${fmt.int(memoryKiB(target.child.pid, 'VmRSS') / 1024)} MiB`);
      }, 5_000);
      let connected: ReportOf<'connected'>[];
      try {
        connected = await connectedWait;
      } finally {
        clearInterval(ticker);
      }
      const seconds = (now() - t0) / 1000;
      const connectCpu = cpuSeconds(target.child.pid) - cpu0;
      const open = connected.reduce((s, r) => s + r.open, 0);
      const failed = connected.reduce((s, r) => s + r.failed, 0);
      const failureSamples = [...new Set(connected.flatMap((r) => r.failureSamples))].slice(0, 5);
      log(`  ${target.name}: ${fmt.int(open)} connected, ${fmt.int(failed)} failed in ${seconds.toFixed(1)} s${failureSamples.length ? ` (${failureSamples.join('; ')})` : ''}`);
      if (target.child.exitCode() !== 'running') throw new Error(`${target.name} exited while clients connected:\n${target.child.output()}`);
      // Let throttled viewer-count updates and garbage settle before reading memory.
      await sleep(3_000);
      const rssAfterKiB = memoryKiB(target.child.pid, 'VmRSS');
      log(`  ${target.name}: RSS ${fmt.int(rssBeforeKiB / 1024)} → ${fmt.int(rssAfterKiB / 1024)} MiB`);
      return new Side(target, clients, { connected: open, failed, failureSamples, seconds, cpuSeconds: connectCpu, rssBeforeKiB, rssAfterKiB }, options);
    } catch (error) {
      await target.stop();
      await clients?.stop();
      throw error;
    }
  }

  /** One show/hide cycle (0 = the warm-up, not counted), with a vote burst between them when asked. */
  async cycle(cycle: number, vote: boolean): Promise<void> {
    const { target, clients, options } = this;
    const label = cycle === 0 ? 'warm-up' : `cycle ${cycle}/${options.cycles}`;
    const overlayId = await target.prepare(cycle);
    const show = await timeFrame(clients, target, ++this.seq, SHOW_PREFIX, this.showFrame === undefined, () => target.show(overlayId));
    if (cycle === 0) this.warmUp = show.cycle;
    else this.shows.push(show.cycle);
    this.showFrame ??= show.sample;
    const c = show.cycle;
    options.log(
      `  ${target.name} ${label}: show → receipt first ${fmt.ms(percentile(c.latencies, 0))} ms, p50 ${fmt.ms(percentile(c.latencies, 50))} ms, p99 ${fmt.ms(percentile(c.latencies, 99))} ms, ` +
        `max ${fmt.ms(percentile(c.latencies, 100))} ms over ${fmt.int(c.latencies.length)} clients (missing ${c.missing}); trigger answered in ${fmt.ms(c.answerMs)} ms; ` +
        `server CPU ${fmt.int(c.serverCpuMs)} ms${c.loopMs === undefined ? '' : ` (send loop ${fmt.ms(c.loopMs)} ms)`}, client CPU ${fmt.int(c.clientCpuMs)} ms`,
    );
    if (vote) {
      const round = await voteRound(clients, target.child, ++this.seq, overlayId, this.connect.connected);
      this.votes.push(round);
      options.log(
        `  ${target.name} votes ${this.votes.length}/${options.voteRounds}: ${fmt.int(round.acked)} acked in ${round.seconds.toFixed(2)} s = ${fmt.int(votesPerSecond(round))}/s ` +
          `(all sent after ${round.sendSeconds.toFixed(2)} s, first ack after ${round.firstAckSeconds.toFixed(2)} s, half after ${round.medianAckSeconds.toFixed(2)} s; ${round.commits} group commits of ${fmt.int(round.commitEvents)} events; main thread ${fmt.int(round.mainThreadMs)} ms; RSS ${fmt.int(round.rssAfterKiB / 1024)} MiB), errors ${round.errors}, unanswered ${round.missing}` +
          (round.errorSamples.length ? ` — ${round.errorSamples.join('; ')}` : ''),
      );
    }
    // The throttled poll.results go out within a second; then hide.
    await sleep(1_500);
    const hide = await timeFrame(clients, target, ++this.seq, HIDE_PREFIX, this.hideFrame === undefined, () => target.hide(overlayId));
    if (cycle > 0) this.hides.push(hide.cycle);
    this.hideFrame ??= hide.sample;
    await sleep(1_000);
    if (target.child.exitCode() !== 'running') throw new Error(`${target.name} exited during the run:\n${target.child.output()}`);
  }

  /** The figures of the whole run, with how many viewers are still connected now. */
  async finish(): Promise<TargetRun> {
    const statusWait = this.clients.all('status', () => true, 10_000, 'status');
    this.clients.sendAll({ cmd: 'status' });
    const status = await statusWait;
    const c = this.connect;
    return {
      name: this.target.name,
      asked: this.options.viewers,
      connected: c.connected,
      failedConnections: c.failed,
      failureSamples: c.failureSamples,
      connectSeconds: c.seconds,
      connectCpuSeconds: c.cpuSeconds,
      rssBeforeKiB: c.rssBeforeKiB,
      rssAfterKiB: c.rssAfterKiB,
      rssPeakKiB: memoryKiB(this.target.child.pid, 'VmHWM'),
      warmUp: this.warmUp,
      shows: this.shows,
      hides: this.hides,
      votes: this.votes,
      heldAtEnd: status.reduce((s, r) => s + r.open, 0),
      drops: status.reduce((s, r) => s + r.drops, 0),
      dropSamples: [...new Set(status.flatMap((r) => r.dropSamples))].slice(0, 5),
      clientCpuSeconds: this.clients.cpuSeconds(),
    };
  }

  async close(): Promise<void> {
    try {
      await this.target.stop();
    } finally {
      await this.clients.stop();
    }
  }
}

/** The lower middle value (the middle one for an odd count). */
function median(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]! : Number.NaN;
}

const cycleFigure = (cycles: Cycle[], q: number) => median(cycles.map((c) => percentile(c.latencies, q)));
const list = (values: number[], format: (n: number) => string) => values.map(format).join(', ');
const votesPerSecond = (r: VoteRound) => (r.seconds > 0 ? r.acked / r.seconds : Number.NaN);
const kib = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');
const rssPerConnection = (run: TargetRun) => (run.connected > 0 ? (run.rssAfterKiB - run.rssBeforeKiB) / run.connected : Number.NaN);

function problems(run: TargetRun): number {
  return (
    run.failedConnections +
    run.drops +
    [...run.shows, ...run.hides].reduce((s, c) => s + c.missing, 0) +
    run.votes.reduce((s, v) => s + v.errors + v.missing, 0)
  );
}

/**
 * The fan-out benchmark: viewers held by one service process, show → receipt latency against a
 * bare `ws` server with the same clients and the same frame, votes acknowledged per second, and
 * server memory per connection. The service is set up first, so that the baseline can send the
 * very overlay.show frame the service sent; then both stay up and their cycles alternate.
 */
export async function fanoutBenchmark(options: FanoutOptions): Promise<BenchTable> {
  const log = options.log;
  const window = `${fmt.int(options.viewers)} viewers over ${options.clientProcesses} client processes, waves of ${options.wave}`;
  let serviceSide: Side | null = null;
  let baselineSide: Side | null = null;
  let service: TargetRun;
  let baseline: TargetRun;
  try {
    log(`service: ${window}…`);
    serviceSide = await Side.open(startServiceTarget, 2, options);
    await serviceSide.cycle(0, false);
    const showFrame = serviceSide.showFrame ?? syntheticShowFrame();
    const hideFrame = serviceSide.hideFrame ?? JSON.stringify({ type: 'overlay.hide', overlayId: `ov_${base62(26)}` });
    log(`baseline (bare ws): ${window}, frame of ${Buffer.byteLength(showFrame)} bytes…`);
    baselineSide = await Side.open(() => startBaselineTarget(showFrame, hideFrame), 1, options);
    await baselineSide.cycle(0, false);
    for (let cycle = 1; cycle <= options.cycles; cycle++) {
      await serviceSide.cycle(cycle, cycle <= options.voteRounds);
      await baselineSide.cycle(cycle, false);
    }
    service = await serviceSide.finish();
    baseline = await baselineSide.finish();
  } finally {
    await baselineSide?.close();
    await serviceSide?.close();
  }

  const p99 = cycleFigure(service.shows, 99);
  const baseP99 = cycleFigure(baseline.shows, 99);
  const p99Limit = baseP99 * TARGET_P99_VS_BASELINE;
  const voteRate = median(service.votes.map(votesPerSecond));
  const serviceProblems = problems(service);
  const baselineProblems = problems(baseline);
  const latencyRow = (figure: string, cycles: (r: TargetRun) => Cycle[], q: number, target = '—', verdict: Row['verdict'] = '—'): Row => ({
    figure,
    value: fmt.ms(cycleFigure(cycles(service), q)),
    baseline: fmt.ms(cycleFigure(cycles(baseline), q)),
    ratio: fmt.ratio(cycleFigure(cycles(service), q), cycleFigure(cycles(baseline), q)),
    target,
    verdict,
  });

  const rows: Row[] = [
    {
      figure: `viewers connected and held to the end (of ${fmt.int(options.viewers)} asked)`,
      value: fmt.int(service.heldAtEnd),
      baseline: fmt.int(baseline.heldAtEnd),
      ratio: fmt.ratio(service.heldAtEnd, baseline.heldAtEnd),
      target: `≥ ${fmt.int(TARGET_VIEWERS)}`,
      verdict: service.heldAtEnd >= TARGET_VIEWERS ? 'pass' : 'fail',
    },
    latencyRow(`show → overlay.show received by the first viewer, ms (median of ${options.cycles} cycles): the time before the fan-out loop starts`, (r) => r.shows, 0),
    latencyRow(`show → overlay.show received, p50 over viewers, ms (median of ${options.cycles} cycles)`, (r) => r.shows, 50),
    latencyRow(
      `show → overlay.show received, p99 over viewers, ms (median of ${options.cycles} cycles)`,
      (r) => r.shows,
      99,
      `≤ ${TARGET_P99_VS_BASELINE}× baseline = ${fmt.ms(p99Limit)}`,
      Number.isFinite(p99) && Number.isFinite(p99Limit) && p99 <= p99Limit ? 'pass' : 'fail',
    ),
    latencyRow(`show → overlay.show received, max over viewers, ms (median of ${options.cycles} cycles)`, (r) => r.shows, 100),
    latencyRow(`hide → overlay.hide received, p99 over viewers, ms (median of ${options.cycles} cycles)`, (r) => r.hides, 99),
    {
      figure: `votes acknowledged per second, burst of one vote per viewer (median of ${service.votes.length} rounds)`,
      value: fmt.int(voteRate),
      baseline: '—',
      ratio: '—',
      target: '—',
      verdict: '—',
    },
    {
      figure: 'server RSS per connection, KiB',
      value: kib(rssPerConnection(service)),
      baseline: kib(rssPerConnection(baseline)),
      ratio: fmt.ratio(rssPerConnection(service), rssPerConnection(baseline)),
      target: '—',
      verdict: '—',
    },
    {
      figure: 'errors: failed or dropped connections, frames not received, votes not acked',
      value: fmt.int(serviceProblems),
      baseline: fmt.int(baselineProblems),
      ratio: '—',
      target: '0',
      verdict: serviceProblems + baselineProblems === 0 ? 'pass' : 'fail',
    },
  ];

  const describeRun = (run: TargetRun) =>
    `${run.name}: ${fmt.int(run.connected)} connected (${fmt.int(run.failedConnections)} failed) in ${run.connectSeconds.toFixed(1)} s, ` +
    `server CPU ${((run.connectCpuSeconds / Math.max(1, run.connected)) * 1e6).toFixed(0)} µs per connection; ` +
    `${fmt.int(run.heldAtEnd)} still open at the end (${fmt.int(run.drops)} dropped); ` +
    `RSS ${fmt.int(run.rssBeforeKiB / 1024)} MiB before connecting, ${fmt.int(run.rssAfterKiB / 1024)} MiB with every viewer connected, peak ${fmt.int(run.rssPeakKiB / 1024)} MiB`;
  const cycles = (run: TargetRun) =>
    `${run.name}: first ${list(run.shows.map((c) => percentile(c.latencies, 0)), fmt.ms)}; p50 ${list(run.shows.map((c) => percentile(c.latencies, 50)), fmt.ms)}; p99 ${list(run.shows.map((c) => percentile(c.latencies, 99)), fmt.ms)}; ` +
    `max ${list(run.shows.map((c) => percentile(c.latencies, 100)), fmt.ms)}; trigger answered after ${list(run.shows.map((c) => c.answerMs), fmt.ms)}; ` +
    `server CPU per show ${list(run.shows.map((c) => c.serverCpuMs), fmt.int)} ms` +
    (run.shows.every((c) => c.loopMs !== undefined) ? `, of which the send loop ${list(run.shows.map((c) => c.loopMs!), fmt.ms)} ms` : '') +
    `; client processes' CPU per show ${list(run.shows.map((c) => c.clientCpuMs), fmt.int)} ms`;

  const warm = (run: TargetRun) =>
    run.warmUp ? `${run.name} p50 ${fmt.ms(percentile(run.warmUp.latencies, 50))}, p99 ${fmt.ms(percentile(run.warmUp.latencies, 99))}, max ${fmt.ms(percentile(run.warmUp.latencies, 100))}` : `${run.name} —`;
  const notes = [
    `After all viewers of a server are connected, one warm-up show/hide (not counted: ${warm(service)}; ${warm(baseline)} ms); then ${options.cycles} cycles alternate service, baseline, service… ` +
      `with both servers up and their viewers connected, so that a slow spell of the machine hits both. Each cycle shows a fresh poll (the baseline: the same frame).`,
    `All show cycles, ms — ${cycles(service)}. ${cycles(baseline)}.`,
    `Vote bursts (service): ${service.votes
      .map((v) => `${fmt.int(v.acked)} of ${fmt.int(v.votes)} acked in ${v.seconds.toFixed(2)} s (${fmt.int(votesPerSecond(v))}/s; all sent after ${v.sendSeconds.toFixed(2)} s, first ack after ${v.firstAckSeconds.toFixed(2)} s, half after ${v.medianAckSeconds.toFixed(2)} s; ${v.commits} group commits of ${fmt.int(v.commitEvents)} events in all; server main thread busy ${fmt.int(v.mainThreadMs)} ms, ${fmt.int(v.mainThreadMs * 1000 / Math.max(1, v.acked))} µs per vote; server RSS ${fmt.int(v.rssAfterKiB / 1024)} MiB after), ${v.errors} errors`)
      .join('; ')}. Each viewer sends one poll.vote on a fresh poll, all at once; an ack means the vote event is committed in DuckDB.`,
    describeRun(service) + '.',
    describeRun(baseline) + '.',
    `Client: ${options.clientProcesses} processes of bench/fanout-client.ts (ws 8, no compression), each from its own loopback address (127.0.<run>.<2+i>), ` +
      `opening connections ${Math.ceil(options.wave / options.clientProcesses)} at a time each. A receipt is stamped with CLOCK_MONOTONIC (process.hrtime) in the client process ` +
      `when its 'message' event fires, and compared with the same clock read by the benchmark just before it sends the admin POST. Client CPU over the whole run: ` +
      `${service.clientCpuSeconds.toFixed(1)} s (service), ${baseline.clientCpuSeconds.toFixed(1)} s (baseline); clients and server share the machine's cores.`,
    `Frames: overlay.show ${service.shows[0]?.bytes ?? 0} bytes from the service, ${baseline.shows[0]?.bytes ?? 0} bytes from the baseline (the same text); the service also sends a poll.results frame right after each poll it shows.`,
    `Baseline: bench/bare-ws-server.ts, node:http + ws 8 WebSocketServer, POST /send sends the body with ws.send(string) to every client in one loop, then answers. ` +
      `Service: node apps/server/bin/svc.js serve, fresh data folder, rate limits off, log level warn; show = POST /v1/broadcasts/${BROADCAST}/overlays/:id/show with the admin token.`,
  ];
  const samples = [
    ...service.failureSamples.map((s) => `service connect: ${s}`),
    ...service.dropSamples.map((s) => `service drop: ${s}`),
    ...service.votes.flatMap((v) => v.errorSamples.map((s) => `service vote: ${s}`)),
    ...baseline.failureSamples.map((s) => `baseline connect: ${s}`),
    ...baseline.dropSamples.map((s) => `baseline drop: ${s}`),
  ];
  for (const sample of [...new Set(samples)].slice(0, 6)) notes.push(`Failure sample — ${sample}`);

  return {
    title: `Fan-out: ${fmt.int(options.viewers)} WebSocket viewers of one broadcast, overlay show → receipt, votes, memory`,
    rows,
    notes,
    runErrors: serviceProblems + baselineProblems > 0,
  };
}
