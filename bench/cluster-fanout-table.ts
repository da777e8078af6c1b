import type { ClusterFanoutOptions, ClusterFanoutRun } from './cluster-fanout';
import { cycleFigure, kib, listOf, median, problems, votesPerSecond, type Cycle, type TargetRun, type VoteRound } from './fanout-side';
import { percentile } from './load';
import { fmt, type BenchTable, type Row } from './report';

/** The issue's target: show → receipt p99 over all viewers of the cluster ≤ this × one node's p99 at the same total viewers. */
export const TARGET_P99_VS_ONE_NODE = 1.25;

const CHANGE_TOPIC = 'content.changed';
const COUNT_TOPIC = 'viewers.counted';
const VOTE_TOPIC = 'poll.voted';

const changes = (run: TargetRun): Cycle[] => [...run.shows, ...run.hides];
/** Bus messages of `topic` per overlay change (median over the shows and hides), or of every topic but the periodic viewer counts. */
const busPerChange = (run: TargetRun, topic?: string) =>
  median(changes(run).map((c) => (topic ? (c.busMessages?.get(topic) ?? 0) : [...(c.busMessages ?? new Map<string, number>())].filter(([t]) => t !== COUNT_TOPIC).reduce((s, [, n]) => s + n, 0))));
const busPerVote = (run: TargetRun) => median(run.votes.map((v: VoteRound) => (v.busMessages?.get(VOTE_TOPIC) ?? 0) / Math.max(1, v.acked)));
/** Mean over the nodes of (VmRSS with the viewers − before) ÷ the node's viewers. */
const rssPerConnection = (run: TargetRun) => median(run.nodes.map((n) => (n.viewers > 0 ? (n.rssAfterKiB - n.rssBeforeKiB) / n.viewers : Number.NaN))) ;
const showCpuPerViewerUs = (run: TargetRun) => (median(run.shows.map((c) => c.serverCpuMs)) * 1000) / Math.max(1, run.connected);
const votes = (run: TargetRun) => median(run.votes.map(votesPerSecond));
const topics = (counts: Map<string, number> | undefined) => [...(counts ?? [])].map(([t, n]) => `${t} ${n}`).join(', ') || 'none';

function rowsOf(run: ClusterFanoutRun, nodes: number): Row[] {
  const { cluster, oneNode, baseline } = run;
  const label = `${fmt.int(run.viewers)} viewers:`;
  const p99 = cycleFigure(cluster.shows, 99);
  const oneP99 = cycleFigure(oneNode.shows, 99);
  const limit = oneP99 * TARGET_P99_VS_ONE_NODE;
  const perChange = busPerChange(cluster, CHANGE_TOPIC);
  const versus = (figure: string, value: number, base: number, format: (n: number) => string): Row => ({
    figure: `${label} ${figure}`,
    value: format(value),
    baseline: format(base),
    ratio: fmt.ratio(value, base),
    target: '—',
    verdict: '—',
  });
  const errors = problems(cluster) + problems(oneNode) + problems(baseline) + (run.embedded ? problems(run.embedded) : 0);
  return [
    {
      ...versus(`viewers held to the end, ${nodes} nodes (baseline: 1 node)`, cluster.heldAtEnd, oneNode.heldAtEnd, fmt.int),
      target: `${fmt.int(run.viewers)}`,
      verdict: cluster.heldAtEnd === run.viewers && oneNode.heldAtEnd === run.viewers ? 'pass' : 'fail',
    },
    {
      ...versus(`show → overlay.show received, p99 over all viewers, ms, ${nodes} nodes (baseline: 1 node in full cluster mode; median of ${cluster.shows.length} cycles)`, p99, oneP99, fmt.ms),
      target: `≤ ${TARGET_P99_VS_ONE_NODE}× 1 node = ${fmt.ms(limit)}`,
      verdict: Number.isFinite(p99) && Number.isFinite(limit) && p99 <= limit ? 'pass' : 'fail',
    },
    versus(`show → overlay.show received, p50 over all viewers, ms, ${nodes} nodes (baseline: 1 node)`, cycleFigure(cluster.shows, 50), cycleFigure(oneNode.shows, 50), fmt.ms),
    versus(`show → overlay.show received by the first viewer, ms, ${nodes} nodes (baseline: 1 node)`, cycleFigure(cluster.shows, 0), cycleFigure(oneNode.shows, 0), fmt.ms),
    versus(`hide → overlay.hide received, p99 over all viewers, ms, ${nodes} nodes (baseline: 1 node)`, cycleFigure(cluster.hides, 99), cycleFigure(oneNode.hides, 99), fmt.ms),
    versus(`show → overlay.show received, p99 over all viewers, ms, ${nodes} nodes (baseline: bare ws, one process)`, p99, cycleFigure(baseline.shows, 99), fmt.ms),
    {
      ...versus(`bus messages per overlay change (${CHANGE_TOPIC} at NATS, median over ${changes(cluster).length} shows and hides), ${nodes} nodes (baseline: 1 node)`, perChange, busPerChange(oneNode, CHANGE_TOPIC), fmt.int),
      target: '1 (one per change, not per viewer or node)',
      verdict: perChange === 1 ? 'pass' : 'fail',
    },
    versus(`bus messages of every topic but ${COUNT_TOPIC} from a change's trigger to its last receipt, ${nodes} nodes (baseline: 1 node)`, busPerChange(cluster), busPerChange(oneNode), fmt.int),
    versus(`bus messages per second with nothing happening (${COUNT_TOPIC}), ${nodes} nodes (baseline: 1 node)`, run.idlePerSecond.cluster.get(COUNT_TOPIC) ?? 0, run.idlePerSecond.oneNode.get(COUNT_TOPIC) ?? 0, (n) => n.toFixed(1)),
    versus(`votes acknowledged per second, burst of one vote per viewer, across ${nodes} nodes (baseline: 1 node; median of ${cluster.votes.length} rounds)`, votes(cluster), votes(oneNode), fmt.int),
    versus(`bus messages (${VOTE_TOPIC}) per vote acknowledged, ${nodes} nodes (baseline: 1 node)`, busPerVote(cluster), busPerVote(oneNode), (n) => n.toFixed(2)),
    versus(`server RSS per connection, KiB, median over the nodes of (RSS delta ÷ its viewers), ${nodes} nodes (baseline: 1 node)`, rssPerConnection(cluster), rssPerConnection(oneNode), kib),
    {
      figure: `${label} errors: failed or dropped connections, frames not received, votes not acked (every side)`,
      value: fmt.int(errors),
      baseline: '—',
      ratio: '—',
      target: '0',
      verdict: errors === 0 ? 'pass' : 'fail',
    },
  ];
}

function sideRow(run: ClusterFanoutRun, side: TargetRun): string[] {
  return [
    fmt.int(run.viewers),
    side.name,
    side.nodes.map((n) => fmt.int(n.viewers)).join(' + '),
    fmt.ms(cycleFigure(side.shows, 50)),
    fmt.ms(cycleFigure(side.shows, 99)),
    fmt.ms(cycleFigure(side.shows, 100)),
    fmt.ms(cycleFigure(side.hides, 99)),
    fmt.int(median(side.shows.map((c) => c.serverCpuMs))),
    side.votes.length ? fmt.int(votes(side)) : '—',
    kib(rssPerConnection(side)),
    ((side.connectCpuSeconds / Math.max(1, side.connected)) * 1e6).toFixed(0),
  ];
}

function notesOf(run: ClusterFanoutRun, nodes: number): string[] {
  const { cluster, oneNode } = run;
  const sides = [cluster, oneNode, ...(run.embedded ? [run.embedded] : []), run.baseline];
  const label = `${fmt.int(run.viewers)} viewers`;
  return [
    `${label}, show p99 per cycle, ms: ${sides.map((s) => `${s.name} ${listOf(s.shows.map((c) => percentile(c.latencies, 99)), fmt.ms)}`).join('; ')}. Trigger answered after (${nodes} nodes) ${listOf(cluster.shows.map((c) => c.answerMs), fmt.ms)} ms.`,
    `${label}, bus messages per change window (${nodes} nodes), by topic: ${changes(cluster).map((c) => `[${topics(c.busMessages)}]`).join(' ')}; per vote burst: ${cluster.votes.map((v) => `[${topics(v.busMessages)}] for ${fmt.int(v.acked)} votes`).join(' ')}. Idle, per second: ${nodes} nodes ${[...run.idlePerSecond.cluster].map(([t, n]) => `${t} ${n.toFixed(1)}`).join(', ') || 'none'}; 1 node ${[...run.idlePerSecond.oneNode].map(([t, n]) => `${t} ${n.toFixed(1)}`).join(', ') || 'none'}. Largest payload per topic, bytes: ${[...run.largestBytes].map(([t, n]) => `${t} ${fmt.int(n)}`).join(', ')}.`,
    `${label}, vote bursts: ${sides.filter((s) => s.votes.length).map((s) => s.votes.map((v) => `${s.name} ${fmt.int(v.acked)} of ${fmt.int(v.votes)} acked in ${v.seconds.toFixed(2)} s (first ack after ${v.firstAckSeconds.toFixed(2)} s, half after ${v.medianAckSeconds.toFixed(2)} s), ${v.errors} errors, main threads of all its nodes ${fmt.int(v.mainThreadMs)} ms = ${fmt.int((v.mainThreadMs * 1000) / Math.max(1, v.acked))} µs per vote acked`).join('; ')).join('; ')}.`,
    `${label}, the cluster's nats-server used ${run.natsCpuSeconds.toFixed(2)} s of CPU over the ${run.cyclesSeconds.toFixed(0)} s of alternating cycles (all sides' cycles and vote bursts, ${((run.natsCpuSeconds / run.cyclesSeconds) * 100).toFixed(1)}% of a core).`,
    `${label}, per node (viewers, RSS before → with viewers → peak, MiB): ${sides.map((s) => `${s.name}: ${s.nodes.map((n) => `${fmt.int(n.viewers)}, ${fmt.int(n.rssBeforeKiB / 1024)} → ${fmt.int(n.rssAfterKiB / 1024)} → ${fmt.int(n.rssPeakKiB / 1024)}`).join('; ')}`).join(' | ')}. Server CPU per show per viewer, µs: ${sides.map((s) => `${s.name} ${showCpuPerViewerUs(s).toFixed(1)}`).join(', ')}.`,
    ...sides.flatMap((s) => [...s.failureSamples.map((x) => `connect (${s.name}): ${x}`), ...s.dropSamples.map((x) => `drop (${s.name}): ${x}`), ...s.votes.flatMap((v) => v.errorSamples.map((x) => `vote (${s.name}): ${x}`))]).slice(0, 4).map((x) => `${label}, failure sample — ${x}`),
  ];
}

export function clusterFanoutTable(options: ClusterFanoutOptions, runs: ClusterFanoutRun[], load: { before: string; after: string }): BenchTable {
  const rows = runs.flatMap((run) => rowsOf(run, options.nodes));
  if (runs.length > 1) {
    const first = runs[0]!;
    const last = runs.at(-1)!;
    const a = busPerChange(first.cluster, CHANGE_TOPIC);
    const b = busPerChange(last.cluster, CHANGE_TOPIC);
    rows.push({
      figure: `bus messages per overlay change at ${fmt.int(last.viewers)} viewers (value) and at ${fmt.int(first.viewers)} (baseline), ${options.nodes} nodes: does not grow with the viewers`,
      value: fmt.int(b),
      baseline: fmt.int(a),
      ratio: fmt.ratio(b, a),
      target: '1.00',
      verdict: a === b && a > 0 ? 'pass' : 'fail',
    });
  }
  rows.push({ figure: 'load average (1, 5, 15 min) before the run (value) and after it (baseline): the machine is shared', value: load.before, baseline: load.after, ratio: '—', target: '—', verdict: '—' });
  const errors = runs.reduce((sum, run) => sum + problems(run.cluster) + problems(run.oneNode) + problems(run.baseline) + (run.embedded ? problems(run.embedded) : 0), 0);
  const notes = [
    `Sides, each with ${options.clientProcesses} client processes of its own and every viewer connected, their cycles alternating (${options.nodes} nodes, 1 node, ${options.embedded ? 'embedded, ' : ''}bare ws; ${options.cycles} cycles after one warm-up each, the first ${options.voteRounds} with a vote burst on the services): ` +
      `${options.nodes} nodes = ${options.nodes} svc processes in full cluster mode (PostgreSQL 15, nats-server 2.9.10 of their own, ClickHouse 18.16; a fresh database each), each client connection taking the nodes in turn; ` +
      `show and hide go to the first node's admin API, so the other nodes' viewers get the change over the bus. 1 node = one svc process in full cluster mode on its own nats-server (no other node to reach). ` +
      `${options.embedded ? 'Embedded = one svc process with DuckDB (no bus). ' : ''}Bare ws = bench/bare-ws-server.ts sending the cluster's overlay.show frame. Every process (nodes, engines, clients) shares this machine's cores.`,
    'Bus messages are counted by one more core-NATS subscriber on svc.bus.> at the cluster\'s nats-server: one message published by a node counts once, however many nodes receive it (the server delivers it to each node\'s subscription, the publisher\'s own included, which drops it by its origin header). A change window runs from the admin POST to the last viewer\'s receipt plus a flush round trip.',
    'An ack of a vote in full cluster mode means JetStream stored it; embedded: DuckDB committed it. RSS per connection: each node\'s VmRSS 3 s after its last viewer connected minus before the first, divided by the viewers asked of it.',
    ...runs.flatMap((run) => notesOf(run, options.nodes)),
  ];
  const extra = [
    {
      title: 'Every side at each total (medians of the cycles)',
      header: ['viewers', 'side', 'viewers per node', 'show p50 ms', 'show p99 ms', 'show max ms', 'hide p99 ms', 'server CPU per show ms (all nodes)', 'votes acked/s', 'RSS per connection KiB', 'server CPU per connection µs'],
      rows: runs.flatMap((run) => [run.cluster, run.oneNode, ...(run.embedded ? [run.embedded] : []), run.baseline].map((side) => sideRow(run, side))),
    },
  ];
  return {
    title: `Cluster fan-out: ${options.nodes} nodes against 1 node and bare ws, ${runs.map((r) => fmt.int(r.viewers)).join(' and ')} viewers of one broadcast`,
    rows,
    notes,
    runErrors: errors > 0,
    extra,
  };
}
