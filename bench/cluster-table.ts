import type { ClusterOptions, ClusterRun } from './cluster';
import { eventsPerSecond, microsPerEvent, type IngestRun } from './cluster-lb-ingest';
import { MAIN_THREAD_PLANNED_SHARE, sizeFor, TARGET_CLUSTER_EVENTS_PER_SECOND, type EventCosts } from './cluster-sizing';
import type { HistoryResult, StoreHistory } from './cluster-history';
import { NATS_SERVERS } from './lb-cluster';
import { percentile } from './load';
import { fmt, type BenchTable, type Row } from './report';

/** The dashboard's target for the whole overview (the issue's). */
export const TARGET_OVERVIEW_P95_MS = 500;

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const micros = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const row = (figure: string, value: string, baseline = '—', ratio = '—', target = '—', verdict: Row['verdict'] = '—'): Row => ({ figure, value, baseline, ratio, target, verdict });
const label = (run: IngestRun) => (run.nodes === 0 ? 'embedded node' : `${run.nodes} node${run.nodes > 1 ? 's' : ''}`);

/** CPU µs per acknowledged event of every part of a run. */
export function costsOf(run: IngestRun): EventCosts {
  return {
    nodeMainThreadMicros: microsPerEvent(run, sum(run.cores.mainThreads)),
    nodeMicros: microsPerEvent(run, sum(run.cores.nodes)),
    natsMicros: microsPerEvent(run, run.cores.nats),
    clickhouseMicros: microsPerEvent(run, run.cores.clickhouse),
    postgresMicros: microsPerEvent(run, run.cores.postgres),
    haproxyMicros: microsPerEvent(run, run.cores.haproxy),
  };
}

/** Each node's main thread / whole process CPU µs per event it accepted itself. */
const perNode = (run: IngestRun) =>
  run.cores.nodes.map((cores, k) => `${micros((run.cores.mainThreads[k]! / run.cores.nodeEventsPerSecond[k]!) * 1e6)} / ${micros((cores / run.cores.nodeEventsPerSecond[k]!) * 1e6)}`).join('; ');

const ingestErrors = (run: IngestRun) => run.load.failedRequests + run.load.rejectedEvents + run.load.duplicateEvents + run.notStored;

function ingestRows(base: IngestRun, runs: IngestRun[]): Row[] {
  const baseCosts = costsOf(base);
  const latency = (run: IngestRun) => `${fmt.ms(percentile(run.load.latenciesMs, 50))} / ${fmt.ms(percentile(run.load.latenciesMs, 99))}`;
  return runs.flatMap((run) => {
    const costs = costsOf(run);
    const name = label(run);
    return [
      row(`ingest events/s through HAProxy, ${name} (baseline: the embedded node of this run, asked directly)`, fmt.int(eventsPerSecond(run)), fmt.int(eventsPerSecond(base)), fmt.ratio(eventsPerSecond(run), eventsPerSecond(base))),
      row(
        `ingest, ${name}: CPU µs per event in the Svc nodes, main threads / whole processes (summed over the nodes; baseline: the embedded node)`,
        `${micros(costs.nodeMainThreadMicros)} / ${micros(costs.nodeMicros)}`,
        `${micros(baseCosts.nodeMainThreadMicros)} / ${micros(baseCosts.nodeMicros)}`,
        fmt.ratio(costs.nodeMicros, baseCosts.nodeMicros),
      ),
      row(
        `ingest, ${name}: CPU µs per event of each node, per event it accepted itself (its svc_events_accepted_total), main thread / whole process (baseline: the embedded node)`,
        perNode(run),
        perNode(base),
      ),
      row(
        `ingest, ${name}: CPU µs per event of the engines: NATS (${NATS_SERVERS} servers, R${NATS_SERVERS}) / ClickHouse / PostgreSQL / HAProxy`,
        `${micros(costs.natsMicros)} / ${micros(costs.clickhouseMicros)} / ${micros(costs.postgresMicros)} / ${micros(costs.haproxyMicros)}`,
      ),
      row(`ingest, ${name}: p50 / p99 request latency ms (baseline: the embedded node)`, latency(run), latency(base)),
    ];
  });
}

function projectionRows(run: IngestRun): Row[] {
  const sizing = sizeFor(costsOf(run));
  const rate = fmt.int(TARGET_CLUSTER_EVENTS_PER_SECOND);
  return [
    row(
      `projection to ${rate} events/s at the costs of the run with ${label(run)}: Svc nodes, each main thread planned at ${MAIN_THREAD_PLANNED_SHARE * 100}% of a core`,
      fmt.int(sizing.nodes),
    ),
    row(
      `projection to ${rate} events/s: cores for the Svc nodes (all together) / NATS (R${NATS_SERVERS}, all servers) / ClickHouse / PostgreSQL / HAProxy`,
      [sizing.nodeCores, sizing.natsCores, sizing.clickhouseCores, sizing.postgresCores, sizing.haproxyCores].map((c) => c.toFixed(1)).join(' / '),
    ),
  ];
}

function fanoutRows(fanout: BenchTable): Row[] {
  const pick = (part: string) => fanout.rows.filter((r) => r.figure.includes(part)).map((r) => ({ ...r, figure: `fan-out: ${r.figure}` }));
  const sides = fanout.extra?.[0];
  const p99Column = sides?.header.indexOf('show p99 ms') ?? -1;
  const p99Of = (side: string) => Number(sides?.rows.find((r) => r[1] === side)?.[p99Column]?.replace(/,/g, ''));
  const viewers = sides?.rows[0]?.[0] ?? '?';
  return [
    ...pick('viewers held to the end'),
    ...pick('overlay.show received, p99 over all viewers, ms, 3 nodes (baseline: 1 node'),
    row(`fan-out: ${viewers} viewers: show → overlay.show received, p99 over all viewers, ms, 3 nodes (baseline: the embedded node)`, fmt.ms(p99Of('3 nodes')), fmt.ms(p99Of('embedded')), fmt.ratio(p99Of('3 nodes'), p99Of('embedded'))),
    ...pick('errors: failed or dropped connections'),
  ];
}

function historyRows(run: ClusterRun): { rows: Row[]; errors: number } {
  const h = run.history;
  if ('error' in h) return { rows: [row(`export, deletion and dashboard on ClickHouse: not measured, the run failed: ${h.error.split('\n')[0]}`, '—', '—', '—', '0 errors', 'fail')], errors: 1 };
  const size = fmt.int(h.events);
  const rate = (s: StoreHistory) => s.export.lines / s.export.seconds;
  const deletionMs = (s: StoreHistory) => s.deletions.map((d) => d.clientMs);
  const storeErrors = (s: StoreHistory) => Math.abs(s.export.lines - h.events) + s.leftBehind + sum(s.deletions.map((d) => Math.abs(d.deleted - d.userEvents)));
  const errors = storeErrors(h.embedded) + storeErrors(h.cluster) + h.overviewMismatches.length;
  const rows: Row[] = [
    row(`export NDJSON over HTTP, events/s, ${size} events on ClickHouse (a cluster node; baseline: the embedded node on DuckDB, same events)`, fmt.int(rate(h.cluster)), fmt.int(rate(h.embedded)), fmt.ratio(rate(h.cluster), rate(h.embedded))),
    row(`export NDJSON: node peak RSS during it, MiB (baseline: the embedded node)`, fmt.int(h.cluster.export.peakRssMiB), fmt.int(h.embedded.export.peakRssMiB), fmt.ratio(h.cluster.export.peakRssMiB, h.embedded.export.peakRssMiB)),
    row(
      `deletion of one user's events among ${size} on ClickHouse, request → job completed, median ms of ${h.cluster.deletions.length} users (baseline: the embedded node, same users)`,
      fmt.int(median(deletionMs(h.cluster))),
      fmt.int(median(deletionMs(h.embedded))),
      fmt.ratio(median(deletionMs(h.cluster)), median(deletionMs(h.embedded))),
    ),
    row(`deletion on ClickHouse, max ms (baseline: the embedded node)`, fmt.int(Math.max(...deletionMs(h.cluster))), fmt.int(Math.max(...deletionMs(h.embedded)))),
    ...h.overviews.map((o) => {
      const p95 = percentile(o.clickhouseMs, 95);
      const base = percentile(o.duckdbMs, 95);
      return row(
        `dashboard overview on ClickHouse, ${o.range}, ${size} events: p95 ms of ${o.clickhouseMs.length} runs (baseline: the embedded store with its rollups, same events)`,
        fmt.ms(p95),
        fmt.ms(base),
        fmt.ratio(p95, base),
        `< ${TARGET_OVERVIEW_P95_MS}`,
        p95 < TARGET_OVERVIEW_P95_MS ? 'pass' : 'fail',
      );
    }),
    row('errors of export, deletion and dashboard: exported lines missing or extra, deletions leaving events or deleting others, overviews differing between the stores (ClickHouse; baseline: embedded)', fmt.int(storeErrors(h.cluster) + h.overviewMismatches.length), fmt.int(storeErrors(h.embedded)), '—', '0', errors === 0 ? 'pass' : 'fail'),
  ];
  return { rows, errors };
}

export function clusterTable(options: ClusterOptions, run: ClusterRun): BenchTable {
  const base = run.embeddedIngest;
  const largest = run.clusterIngest.at(-1)!;
  const hooks = run.webhooks;
  const hookRate = (b: typeof hooks.cluster) => b.deliveries / b.seconds;
  const hookCpu = (b: typeof hooks.cluster) => ((b.nodesCpuSeconds / Math.max(1, b.deliveries)) * 1e6).toFixed(1);
  const hookErrors = (b: typeof hooks.cluster) => b.missing + b.invalid;
  const ingestErrorCount = sum([base, ...run.clusterIngest].map(ingestErrors));
  const history = historyRows(run);
  const fanoutErrors = run.fanout.runErrors ? 1 : 0;
  const rows: Row[] = [
    ...ingestRows(base, run.clusterIngest),
    ...projectionRows(largest),
    row('ingest errors, all runs (failed requests, rejected or duplicate events, acknowledged events not in ClickHouse 90 s later)', fmt.int(ingestErrorCount), '—', '—', '0', ingestErrorCount === 0 ? 'pass' : 'fail'),
    ...fanoutRows(run.fanout),
    row(
      `webhook deliveries/s after a burst of ${fmt.int(options.webhookEvents)} events, shared queue (QueueDispatcher) on ${hooks.cluster.nodes} nodes behind HAProxy (baseline: the embedded dispatcher)`,
      fmt.int(hookRate(hooks.cluster)),
      fmt.int(hookRate(hooks.embedded)),
      fmt.ratio(hookRate(hooks.cluster), hookRate(hooks.embedded)),
    ),
    row('webhooks: CPU µs per delivered event of all the nodes, ingest and delivery (baseline: the embedded node)', hookCpu(hooks.cluster), hookCpu(hooks.embedded)),
    row('webhook errors: events not delivered, signatures the receiver refused (shared queue; baseline: embedded)', fmt.int(hookErrors(hooks.cluster)), fmt.int(hookErrors(hooks.embedded)), '—', '0', hookErrors(hooks.cluster) + hookErrors(hooks.embedded) === 0 ? 'pass' : 'fail'),
    ...history.rows,
    row('load average (1, 5, 15 min) before the run (value) and after it (baseline): the machine is shared', run.loadBefore, run.loadAfter),
  ];
  return {
    title: `Cluster: ingest through HAProxy with 1–${options.maxNodes} nodes, fan-out, webhooks, and export, deletion and dashboard on ClickHouse with ${fmt.int(options.events)} events`,
    rows,
    notes: notesOf(options, run),
    runErrors: ingestErrorCount + history.errors + hookErrors(hooks.cluster) + hookErrors(hooks.embedded) + fanoutErrors > 0,
    extra: [
      {
        title: 'Ingest, every run: cores in the measured window (CPU seconds per second)',
        header: ['run', 'events/s', 'nodes, whole process (main thread)', 'NATS', 'ClickHouse', 'PostgreSQL', 'HAProxy', 'load client', 'load average at start'],
        rows: [base, ...run.clusterIngest].map((r) => [
          label(r),
          fmt.int(eventsPerSecond(r)),
          r.cores.nodes.map((c, k) => `${c.toFixed(2)} (${r.cores.mainThreads[k]!.toFixed(2)})`).join(' + '),
          r.cores.nats.toFixed(2),
          r.cores.clickhouse.toFixed(2),
          r.cores.postgres.toFixed(2),
          r.cores.haproxy.toFixed(2),
          r.cores.client.toFixed(2),
          r.loadAverage.toFixed(1),
        ]),
      },
    ],
  };
}

function historyNotes(options: ClusterOptions, h: HistoryResult): string[] {
  const overviewP50 = h.overviews.map((o) => `${o.range} p50 ${fmt.ms(percentile(o.clickhouseMs, 50))} ms (DuckDB ${fmt.ms(percentile(o.duckdbMs, 50))})`).join('; ');
  return [
    `History: ${fmt.int(h.events)} events of the dashboard benchmark's generator (30 days, 200 broadcasts) made in DuckDB in ${h.generateSeconds.toFixed(0)} s and copied to ClickHouse 18.16 in ${h.copySeconds.toFixed(0)} s (${fmt.int(h.events / h.copySeconds)} rows/s: DuckDB's COPY to newline-delimited JSON, streamed as one INSERT … FORMAT JSONEachRow naming the columns of the events as stored before migration 5, so that ClickHouse computes the fields of data from it; merges running); the dashboard rollups of every hour then derived in ${h.deriveSeconds.toFixed(1)} s (${fmt.int(h.events / h.deriveSeconds)} events/s), as a node derives hours once they are quiet, and the dashboard read after ClickHouse's merges ended (${h.mergeWaitSeconds.toFixed(0)} s later, ${h.clickhouseParts} active parts of events). The same events back an embedded node (DuckDB file) and a cluster node (ClickHouse, its own nats-server, R1), one after the other.`,
    `Dashboard: AnalyticsService.overview (all six panels) in the benchmark process over ClickHouseAnalyticsStore and over the embedded store (rollups), taking turns, ${options.dashboardRuns} runs per range after one untimed run whose answers must agree. ${overviewP50}.`,
    `Export: GET /v1/analytics/events?format=ndjson of the node, read to the end (ClickHouse ${h.cluster.export.seconds.toFixed(1)} s, embedded ${h.embedded.export.seconds.toFixed(1)} s; node CPU µs per event ${((h.cluster.export.cpuSeconds / h.cluster.export.lines) * 1e6).toFixed(2)} / ${((h.embedded.export.cpuSeconds / h.embedded.export.lines) * 1e6).toFixed(2)}). Deletion: DELETE /v1/users/{id}/events, polled every 10 ms until the job is completed, then the user's export checked empty; users of typical size (${h.cluster.deletions.map((d) => d.userEvents).join(', ')} events). ClickHouse ms: ${h.cluster.deletions.map((d) => fmt.int(d.clientMs)).join(', ')}; embedded ms: ${h.embedded.deletions.map((d) => fmt.int(d.clientMs)).join(', ')}.`,
  ];
}

function notesOf(options: ClusterOptions, run: ClusterRun): string[] {
  const largest = run.clusterIngest.at(-1)!;
  const sizing = sizeFor(costsOf(largest));
  return [
    `Run from ${run.startedAt.toISOString().slice(11, 16)} to ${run.endedAt.toISOString().slice(11, 16)} UTC; every process (nodes, engines, load client, receiver) shares this machine's cores, so the cluster's total cannot grow with its nodes here: the CPU µs per event are the figures that carry over, and they include the contention of two cores.`,
    `Ingest: the ingest benchmark's client (undici, ${options.connections} keep-alive connections, one request in flight each, batches of 100 new events stamped with the time they are sent), ${options.warmupSeconds} s warm-up + ${options.seconds} s measured, one run per shape. Cluster runs: nodes in full cluster mode behind HAProxy (leastconn, /readyz checks; packages/engines), each run on a fresh NATS cluster of ${NATS_SERVERS} servers with streams of ${NATS_SERVERS} replicas (as npm run cluster), a fresh PostgreSQL and ClickHouse database; an answer means JetStream stored the batch on a majority; each node runs its writer, so its CPU includes moving events into ClickHouse. Baseline: svc serve embedded (DuckDB), asked directly. Engine CPU from /proc: every nats-server, clickhouse-server, the postmaster and its backends, haproxy.`,
    `Projection: cores = µs per event × ${fmt.int(TARGET_CLUSTER_EVENTS_PER_SECOND)} events/s, at the costs of the run with ${label(largest)}; nodes = the nodes' main-thread cores ÷ ${MAIN_THREAD_PLANNED_SHARE} (one event loop per node). ${fmt.int(sizing.nodes)} nodes, ${sizing.nodeCores.toFixed(1)} node cores, NATS ${sizing.natsCores.toFixed(1)}, ClickHouse ${sizing.clickhouseCores.toFixed(1)} (its merges included), PostgreSQL ${sizing.postgresCores.toFixed(1)}, HAProxy ${sizing.haproxyCores.toFixed(1)}.`,
    `Fan-out: bench/cluster-fanout.ts with one total of ${fmt.int(options.fanoutViewers)} viewers, ${options.fanoutCycles} cycles, 1 vote burst, 2 client processes per side (its own PostgreSQL, ClickHouse and nats-servers, R1); its full table is printed by --only cluster-fanout.`,
    `Webhooks: bench/webhooks.ts's burst (${fmt.int(options.webhookEvents)} events in batches of 100 over 64 connections, deliveries/s from the first receipt to the last, receiver verifying every signature): embedded node; then ${run.webhooks.cluster.nodes} nodes behind HAProxy on a NATS cluster (R${NATS_SERVERS}), the burst ingested through HAProxy, every node's QueueDispatcher taking from the WEBHOOKS work queue. Shared queue: ${fmt.int(run.webhooks.cluster.deliveries)} in ${run.webhooks.cluster.seconds.toFixed(1)} s (ingest ${run.webhooks.cluster.ingestSeconds.toFixed(1)} s, ${fmt.int(run.webhooks.cluster.duplicates)} repeats); embedded: ${fmt.int(run.webhooks.embedded.deliveries)} in ${run.webhooks.embedded.seconds.toFixed(1)} s (ingest ${run.webhooks.embedded.ingestSeconds.toFixed(1)} s).`,
    ...('error' in run.history ? [] : historyNotes(options, run.history)),
  ];
}
