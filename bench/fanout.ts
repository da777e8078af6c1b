import { cycleFigure, kib, listOf, problems, rssPerConnection, Side, votesPerSecond, median, type Cycle, type FanoutOptions, type TargetRun } from './fanout-side';
import { BROADCAST, startBaselineTarget, startEmbeddedTarget, syntheticShowFrame } from './fanout-targets';
import { base62 } from './ingest';
import { percentile } from './load';
import { fmt, type BenchTable, type Row } from './report';

export type { FanoutOptions } from './fanout-side';

/** The issue's targets: viewers held by one server process, and show latency against the bare baseline. */
export const TARGET_VIEWERS = 18_000;
export const TARGET_P99_VS_BASELINE = 1.5;

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
    serviceSide = await Side.open(() => startEmbeddedTarget('service'), 2, options);
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
    `${run.name}: first ${listOf(run.shows.map((c) => percentile(c.latencies, 0)), fmt.ms)}; p50 ${listOf(run.shows.map((c) => percentile(c.latencies, 50)), fmt.ms)}; p99 ${listOf(run.shows.map((c) => percentile(c.latencies, 99)), fmt.ms)}; ` +
    `max ${listOf(run.shows.map((c) => percentile(c.latencies, 100)), fmt.ms)}; trigger answered after ${listOf(run.shows.map((c) => c.answerMs), fmt.ms)}; ` +
    `server CPU per show ${listOf(run.shows.map((c) => c.serverCpuMs), fmt.int)} ms` +
    (run.shows.every((c) => c.loopMs !== undefined) ? `, of which the send loop ${listOf(run.shows.map((c) => c.loopMs!), fmt.ms)} ms` : '') +
    `; client processes' CPU per show ${listOf(run.shows.map((c) => c.clientCpuMs), fmt.int)} ms`;

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
