/**
 * The timed parts of a fan-out cycle: one frame from its trigger to every viewer, and one vote
 * burst from the first vote to the last answer, with the servers' CPU and the bus messages meanwhile.
 */
import { readFileSync } from 'node:fs';
import type { ClientGroup } from './fanout-clients';
import { POLL, type Target } from './fanout-targets';
import { scrapeCommits, type CommitSample } from './ingest';
import { cpuSeconds, type Child } from './processes';

const FRAME_TIMEOUT_MS = 30_000;
const VOTE_TIMEOUT_MS = 60_000;

/** CLOCK_MONOTONIC in ms, the clock the client processes stamp arrivals with. */
export const now = () => Number(process.hrtime.bigint() / 1000n) / 1000;

/** VmRSS / VmHWM of a process in KiB, from /proc; NaN where missing. */
export function memoryKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
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

export const serverCpuSeconds = (nodes: Child[]) => nodes.reduce((sum, node) => sum + cpuSeconds(node.pid), 0);
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
export async function timeFrame(clients: ClientGroup, target: Target, bus: BusCounter | undefined, seq: number, prefix: string, capture: boolean, trigger: () => Promise<number | undefined>) {
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

export async function voteRound(clients: ClientGroup, nodes: Child[], bus: BusCounter | undefined, seq: number, pollId: string, viewers: number): Promise<VoteRound> {
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
