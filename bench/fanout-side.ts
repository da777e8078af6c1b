import { ClientGroup, type ReportOf } from './fanout-clients';
import { memoryKiB, now, serverCpuSeconds, timeFrame, voteRound, type BusCounter, type Cycle, type VoteRound } from './fanout-measure';
import type { Target } from './fanout-targets';
import { percentile } from './load';
import type { Child } from './processes';
import { fmt } from './report';

export type { BusCounter, Cycle, VoteRound } from './fanout-measure';

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
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

