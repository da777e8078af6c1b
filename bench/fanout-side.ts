import { readFileSync } from 'node:fs';
import { ClientGroup, type ReportOf } from './fanout-clients';
import { POLL, type Target } from './fanout-targets';
import { scrapeCommits, type CommitSample } from './ingest';
import { percentile } from './load';
import { cpuSeconds, type Child } from './processes';
import { fmt } from './report';

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

/** Counts what the bus between nodes carries (a subscriber on its subjects), for a side with one. */
export interface BusCounter {
  /** Messages seen so far per subject. */
  snapshot(): Map<string, number>;
  /** Resolves once the messages published before the call were seen. */
  flush(): Promise<void>;
}

export interface Cycle {
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
  /** Bus messages per subject from the trigger to the last receipt, when the side has a bus counter. */
  busMessages?: Map<string, number>;
}

export interface VoteRound {
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
  /** CPU of the servers' main JavaScript threads from the first vote sent to the last ack, ms. */
  mainThreadMs: number;
  /** Servers' VmRSS (summed over the nodes) once every vote is acked, KiB. */
  rssAfterKiB: number;
  /** Bus messages per subject from the first vote sent to the last ack, when the side has a bus counter. */
  busMessages?: Map<string, number>;
  errorSamples: string[];
}

/** One server process of a side: its viewers (those asked of it) and its memory. */
export interface NodeRun {
  viewers: number;
  rssBeforeKiB: number;
  rssAfterKiB: number;
  rssPeakKiB: number;
}

export interface TargetRun {
  name: string;
  asked: number;
  connected: number;
  failedConnections: number;
  failureSamples: string[];
  connectSeconds: number;
  connectCpuSeconds: number;
  /** Summed over the nodes. */
  rssBeforeKiB: number;
  rssAfterKiB: number;
  rssPeakKiB: number;
  nodes: NodeRun[];
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

function assertRunning(target: Target, when: string): void {
  const gone = target.nodes.find((node) => node.exitCode() !== 'running');
  if (gone) throw new Error(`${target.name} (a server process) exited ${when}:\n${gone.output()}`);
}

const serverCpuSeconds = (nodes: Child[]) => nodes.reduce((sum, node) => sum + cpuSeconds(node.pid), 0);
const sumOver = (nodes: Child[], f: (node: Child) => number) => nodes.reduce((sum, node) => sum + f(node), 0);

function difference(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [subject, n] of after) if (n - (before.get(subject) ?? 0) > 0) counts.set(subject, n - (before.get(subject) ?? 0));
  return counts;
}

async function sumCommits(nodes: Child[]): Promise<CommitSample> {
  const samples = await Promise.all(nodes.map((node) => scrapeCommits(node.url)));
  return samples.reduce((a, b) => ({ seconds: a.seconds + b.seconds, count: a.count + b.count, events: a.events + b.events, fast: a.fast + b.fast }));
}

/** Arms every client for `prefix`, runs `trigger`, and collects the receive times. */
async function timeFrame(clients: ClientGroup, target: Target, bus: BusCounter | undefined, seq: number, prefix: string, capture: boolean, trigger: () => Promise<number | undefined>) {
  clients.sendAll({ cmd: 'arm', seq, prefix, capture });
  await clients.all('armed', (r) => r.seq === seq, 10_000, 'arm');
  const arrivals = clients.map((i) => clients.next(i, 'arrivals', (r) => r.seq === seq, FRAME_TIMEOUT_MS));
  const cpu0 = serverCpuSeconds(target.nodes);
  const clientCpu0 = clients.cpuSeconds();
  const bus0 = bus?.snapshot();
  const sent = now();
  const loopMs = await trigger();
  const answered = now();
  let reports = await Promise.all(arrivals);
  const cpu1 = serverCpuSeconds(target.nodes);
  const clientCpu1 = clients.cpuSeconds();
  await bus?.flush();
  const busMessages = bus && bus0 ? difference(bus.snapshot(), bus0) : undefined;
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
    busMessages,
  };
  return { cycle, sample: reports.find((r) => r!.sample)?.sample };
}

async function voteRound(clients: ClientGroup, nodes: Child[], bus: BusCounter | undefined, seq: number, pollId: string, viewers: number): Promise<VoteRound> {
  const commits0 = await sumCommits(nodes);
  const bus0 = bus?.snapshot();
  const main0 = sumOver(nodes, (node) => cpuSeconds(node.pid, node.pid));
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
  const main1 = sumOver(nodes, (node) => cpuSeconds(node.pid, node.pid));
  const rssAfterKiB = sumOver(nodes, (node) => memoryKiB(node.pid, 'VmRSS'));
  const commits1 = await sumCommits(nodes);
  await bus?.flush();
  const busMessages = bus && bus0 ? difference(bus.snapshot(), bus0) : undefined;
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
    busMessages,
  };
}

/**
 * Viewers asked of each node when every client process takes the nodes in turn (connection j
 * of a process to node j mod nodes).
 */
export function viewersPerNode(counts: number[], nodes: number): number[] {
  const perNode = Array.from({ length: nodes }, () => 0);
  for (const count of counts) for (let k = 0; k < nodes; k++) perNode[k]! += Math.floor(count / nodes) + (k < count % nodes ? 1 : 0);
  return perNode;
}

const rss = (nodes: Child[]) => nodes.map((node) => memoryKiB(node.pid, 'VmRSS'));
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/**
 * The servers of one side (one process, or a cluster's nodes) with its client processes and
 * every viewer connected (to the nodes in turn), kept up between cycles so that the sides'
 * cycles can alternate.
 */
export class Side {
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
      nodes: NodeRun[];
    },
    private readonly options: FanoutOptions,
    private readonly bus?: BusCounter,
  ) {}

  /**
   * Starts the servers and the client processes and connects every viewer, `run` picking the
   * source addresses; `bus` counts the bus messages of each timed change, for a cluster.
   */
  static async open(start: () => Promise<Target>, run: number, options: FanoutOptions, bus?: BusCounter): Promise<Side> {
    const log = options.log;
    const target = await start();
    let clients: ClientGroup | null = null;
    try {
      clients = await ClientGroup.start(options.clientProcesses);
      await sleep(1_000);
      const rssBefore = rss(target.nodes);

      // Connect, in waves, each client process from its own loopback address.
      const perProcess = Math.ceil(options.viewers / clients.size);
      const wave = Math.max(1, Math.ceil(options.wave / clients.size));
      const connectedWait = clients.all('connected', () => true, CONNECT_TIMEOUT_MS, 'connect');
      const cpu0 = serverCpuSeconds(target.nodes);
      const t0 = now();
      const counts = clients.map((i) => Math.max(0, Math.min(perProcess, options.viewers - i * perProcess)));
      for (let i = 0; i < clients.size; i++) {
        clients.send(i, {
          cmd: 'connect',
          urls: target.viewerUrls,
          count: counts[i]!,
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
        log(`  ${target.name}: ${fmt.int(open)} open, ${fmt.int(failed)} failed, server RSS ${rss(target.nodes).map((kib) => fmt.int(kib / 1024)).join(' + ')} MiB`);
      }, 5_000);
      let connected: ReportOf<'connected'>[];
      try {
        connected = await connectedWait;
      } finally {
        clearInterval(ticker);
      }
      const seconds = (now() - t0) / 1000;
      const connectCpu = serverCpuSeconds(target.nodes) - cpu0;
      const open = connected.reduce((s, r) => s + r.open, 0);
      const failed = connected.reduce((s, r) => s + r.failed, 0);
      const failureSamples = [...new Set(connected.flatMap((r) => r.failureSamples))].slice(0, 5);
      log(`  ${target.name}: ${fmt.int(open)} connected, ${fmt.int(failed)} failed in ${seconds.toFixed(1)} s${failureSamples.length ? ` (${failureSamples.join('; ')})` : ''}`);
      assertRunning(target, 'while clients connected');
      // Let throttled viewer-count updates and garbage settle before reading memory.
      await sleep(3_000);
      const rssAfter = rss(target.nodes);
      const asked = viewersPerNode(counts, target.nodes.length);
      const nodes = target.nodes.map((_, k) => ({ viewers: asked[k]!, rssBeforeKiB: rssBefore[k]!, rssAfterKiB: rssAfter[k]!, rssPeakKiB: Number.NaN }));
      log(`  ${target.name}: RSS ${nodes.map((n) => `${fmt.int(n.rssBeforeKiB / 1024)} → ${fmt.int(n.rssAfterKiB / 1024)}`).join(', ')} MiB`);
      return new Side(target, clients, { connected: open, failed, failureSamples, seconds, cpuSeconds: connectCpu, nodes }, options, bus);
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
    const show = await timeFrame(clients, target, this.bus, ++this.seq, SHOW_PREFIX, this.showFrame === undefined, () => target.show(overlayId));
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
      const round = await voteRound(clients, target.nodes, this.bus, ++this.seq, overlayId, this.connect.connected);
      this.votes.push(round);
      options.log(
        `  ${target.name} votes ${this.votes.length}/${options.voteRounds}: ${fmt.int(round.acked)} acked in ${round.seconds.toFixed(2)} s = ${fmt.int(votesPerSecond(round))}/s ` +
          `(all sent after ${round.sendSeconds.toFixed(2)} s, first ack after ${round.firstAckSeconds.toFixed(2)} s, half after ${round.medianAckSeconds.toFixed(2)} s; ${round.commits} group commits of ${fmt.int(round.commitEvents)} events; main thread ${fmt.int(round.mainThreadMs)} ms; RSS ${fmt.int(round.rssAfterKiB / 1024)} MiB), errors ${round.errors}, unanswered ${round.missing}` +
          (round.errorSamples.length ? ` — ${round.errorSamples.join('; ')}` : ''),
      );
    }
    // The throttled poll.results go out within a second; then hide.
    await sleep(1_500);
    const hide = await timeFrame(clients, target, this.bus, ++this.seq, HIDE_PREFIX, this.hideFrame === undefined, () => target.hide(overlayId));
    if (cycle > 0) this.hides.push(hide.cycle);
    this.hideFrame ??= hide.sample;
    await sleep(1_000);
    assertRunning(target, 'during the run');
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
      rssBeforeKiB: sum(c.nodes.map((n) => n.rssBeforeKiB)),
      rssAfterKiB: sum(c.nodes.map((n) => n.rssAfterKiB)),
      rssPeakKiB: sum(this.target.nodes.map((node) => memoryKiB(node.pid, 'VmHWM'))),
      nodes: c.nodes.map((n, k) => ({ ...n, rssPeakKiB: memoryKiB(this.target.nodes[k]!.pid, 'VmHWM') })),
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
export function median(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]! : Number.NaN;
}

export const cycleFigure = (cycles: Cycle[], q: number) => median(cycles.map((c) => percentile(c.latencies, q)));
export const listOf = (values: number[], format: (n: number) => string) => values.map(format).join(', ');
export const votesPerSecond = (r: VoteRound) => (r.seconds > 0 ? r.acked / r.seconds : Number.NaN);
export const kib = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');
export const rssPerConnection = (run: TargetRun) => (run.connected > 0 ? (run.rssAfterKiB - run.rssBeforeKiB) / run.connected : Number.NaN);

export function problems(run: TargetRun): number {
  return (
    run.failedConnections +
    run.drops +
    [...run.shows, ...run.hides].reduce((s, c) => s + c.missing, 0) +
    run.votes.reduce((s, v) => s + v.errors + v.missing, 0)
  );
}

