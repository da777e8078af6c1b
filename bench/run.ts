/**
 * `npm run bench`: runs the benchmarks and prints, as markdown on stdout, one table of every
 * figure (value, baseline, ratio, target, pass/fail) and then each benchmark's own table with
 * its notes (progress goes to stderr). Each benchmark is a module of bench/ returning one BenchTable;
 * add new ones to BENCHMARKS. `--only ingest,fanout` runs some of them (default: all).
 *
 *   npm run bench -- [--only ingest,fanout,dashboard,export,webhooks,metadata,cluster-ingest]
 *     ingest: [--seconds N] [--warmup N] [--connections N] [--repeat N] [--sweep 8,32,64] [--events N]
 *     fanout: [--viewers N] [--client-processes N] [--wave N] [--cycles N] [--vote-rounds N]
 *     dashboard: [--dashboard-events N] [--dashboard-runs N] [--dashboard-probes N]
 *     dashboard-ui: [--dashboard-ui-runs N]   (needs Chromium at /usr/bin/chromium)
 *     export: [--export-events N] [--export-deletions N]
 *     webhooks: [--webhook-events N] [--webhook-rate N]
 *     metadata: [--metadata-seconds N] [--metadata-repeat N]   (needs PostgreSQL 15)
 *     cluster-ingest: ingest's --seconds --warmup --connections --repeat --events, and
 *       [--cluster-writer-events N] [--cluster-read-events N]   (needs PostgreSQL 15, nats-server, clickhouse-server)
 *     cluster-fanout: [--cluster-viewers 3000,9000] [--cluster-nodes 3] [--cluster-client-processes 2]
 *       [--cluster-cycles 3] [--cluster-vote-rounds 1] [--cluster-embedded true|false], fanout's --wave   (needs the same engines)
 *     cluster: ingest's --seconds --warmup --connections --events, and [--cluster-max-nodes 3]
 *       [--cluster-fanout-viewers 3000] [--cluster-cycles 3] [--cluster-events 10000000] [--cluster-deletions 3]
 *       [--cluster-dashboard-runs 20] [--cluster-webhook-events 20000]   (needs the same engines and haproxy)
 */
import { parseArgs } from 'node:util';
import { dashboardBenchmark, DEFAULT_DASHBOARD_EVENTS } from './dashboard';
import { dashboardUiBenchmark } from './dashboard-ui';
import { fanoutBenchmark, TARGET_VIEWERS } from './fanout';
import { DEFAULT_EXPORT_EVENTS, exportBenchmark } from './export';
import { DEFAULT_CONNECTIONS, ingestBenchmark } from './ingest';
import { metadataBenchmark } from './metadata';
import { clusterIngestBenchmark, DEFAULT_READ_EVENTS, DEFAULT_WRITER_EVENTS } from './cluster-ingest';
import { clusterFanoutBenchmark, DEFAULT_CLUSTER_TOTALS } from './cluster-fanout';
import { clusterBenchmark, DEFAULT_CLUSTER_EVENTS, DEFAULT_CLUSTER_FANOUT_VIEWERS, DEFAULT_CLUSTER_WEBHOOK_EVENTS } from './cluster';
import { killAll } from './processes';
import { DEFAULT_WEBHOOK_EVENTS, DEFAULT_WEBHOOK_RATE, webhookBenchmark } from './webhooks';
import { machineInfo, renderReport, type BenchTable } from './report';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: String(DEFAULT_CONNECTIONS) },
    repeat: { type: 'string', default: '3' },
    sweep: { type: 'string', default: '' },
    events: { type: 'string', default: '1500000' },
    viewers: { type: 'string', default: String(TARGET_VIEWERS) },
    'client-processes': { type: 'string', default: '4' },
    wave: { type: 'string', default: '500' },
    cycles: { type: 'string', default: '5' },
    'vote-rounds': { type: 'string', default: '3' },
    'dashboard-events': { type: 'string', default: String(DEFAULT_DASHBOARD_EVENTS) },
    'dashboard-runs': { type: 'string', default: '20' },
    'dashboard-probes': { type: 'string', default: '10' },
    'dashboard-ui-runs': { type: 'string', default: '5' },
    'export-events': { type: 'string', default: String(DEFAULT_EXPORT_EVENTS) },
    'export-deletions': { type: 'string', default: '5' },
    'webhook-events': { type: 'string', default: String(DEFAULT_WEBHOOK_EVENTS) },
    'webhook-rate': { type: 'string', default: String(DEFAULT_WEBHOOK_RATE) },
    'metadata-seconds': { type: 'string', default: '5' },
    'metadata-repeat': { type: 'string', default: '3' },
    'cluster-writer-events': { type: 'string', default: String(DEFAULT_WRITER_EVENTS) },
    'cluster-read-events': { type: 'string', default: String(DEFAULT_READ_EVENTS) },
    'cluster-viewers': { type: 'string', default: DEFAULT_CLUSTER_TOTALS.join(',') },
    'cluster-nodes': { type: 'string', default: '3' },
    'cluster-client-processes': { type: 'string', default: '2' },
    'cluster-cycles': { type: 'string', default: '3' },
    'cluster-vote-rounds': { type: 'string', default: '1' },
    'cluster-embedded': { type: 'string', default: 'true' },
    'cluster-max-nodes': { type: 'string', default: '3' },
    'cluster-fanout-viewers': { type: 'string', default: String(DEFAULT_CLUSTER_FANOUT_VIEWERS) },
    'cluster-events': { type: 'string', default: String(DEFAULT_CLUSTER_EVENTS) },
    'cluster-deletions': { type: 'string', default: '3' },
    'cluster-dashboard-runs': { type: 'string', default: '20' },
    'cluster-webhook-events': { type: 'string', default: String(DEFAULT_CLUSTER_WEBHOOK_EVENTS) },
    only: { type: 'string', default: '' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  process.stdout.write(
    [
      'npm run bench -- [--only ingest,fanout,dashboard,export,webhooks,metadata,cluster-ingest,cluster-fanout,cluster]   (default: every benchmark)',
      '  ingest: [--seconds 10] [--warmup 2] [--connections 64] [--repeat 3] [--sweep 8,32,64] [--events 1500000]',
      `  fanout: [--viewers ${TARGET_VIEWERS}] [--client-processes 4] [--wave 500] [--cycles 5] [--vote-rounds 3]`,
      `  dashboard: [--dashboard-events ${DEFAULT_DASHBOARD_EVENTS}] [--dashboard-runs 20] [--dashboard-probes 10]`,
      '  dashboard-ui: [--dashboard-ui-runs 5]   (needs Chromium at /usr/bin/chromium)',
      `  export: [--export-events ${DEFAULT_EXPORT_EVENTS}] [--export-deletions 5]`,
      `  webhooks: [--webhook-events ${DEFAULT_WEBHOOK_EVENTS}] [--webhook-rate ${DEFAULT_WEBHOOK_RATE}]`,
      '  metadata: [--metadata-seconds 5] [--metadata-repeat 3]   (needs PostgreSQL 15: apt-get install postgresql-15)',
      `  cluster-ingest: ingest's --seconds --warmup --connections --repeat --events, [--cluster-writer-events ${DEFAULT_WRITER_EVENTS}] [--cluster-read-events ${DEFAULT_READ_EVENTS}]`,
      '    (needs postgresql-15, nats-server, clickhouse-server: apt-get install)',
      `  cluster-fanout: [--cluster-viewers ${DEFAULT_CLUSTER_TOTALS.join(',')}] [--cluster-nodes 3] [--cluster-client-processes 2] [--cluster-cycles 3] [--cluster-vote-rounds 1] [--cluster-embedded true] [--wave 500]`,
      '    (the same engines as cluster-ingest)',
      `  cluster: ingest's --seconds --warmup --connections --events, [--cluster-max-nodes 3] [--cluster-fanout-viewers ${DEFAULT_CLUSTER_FANOUT_VIEWERS}] [--cluster-cycles 3]`,
      `    [--cluster-events ${DEFAULT_CLUSTER_EVENTS}] [--cluster-deletions 3] [--cluster-dashboard-runs 20] [--cluster-webhook-events ${DEFAULT_CLUSTER_WEBHOOK_EVENTS}]`,
      '    (the same engines and haproxy: apt-get install haproxy)',
      '',
    ].join('\n'),
  );
  process.exit(0);
}

function positive(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number; got "${raw}"`);
  return n;
}

const log = (line: string) => process.stderr.write(`${line}\n`);

// Children are killed on any way out, including Ctrl-C.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    killAll();
    process.exit(130);
  });
}

const BENCHMARKS: { name: string; run: () => Promise<BenchTable> }[] = [
  {
    name: 'ingest',
    run: () =>
      ingestBenchmark({
        seconds: positive('seconds', values.seconds),
        warmupSeconds: positive('warmup', values.warmup),
        connections: Math.round(positive('connections', values.connections)),
        repeat: Math.round(positive('repeat', values.repeat)),
        sweep: values.sweep ? values.sweep.split(',').map((c) => Math.round(positive('sweep', c.trim()))) : [],
        poolEvents: Math.round(positive('events', values.events)),
        log,
      }),
  },
  {
    name: 'fanout',
    run: () => {
      const cycles = Math.round(positive('cycles', values.cycles));
      return fanoutBenchmark({
        viewers: Math.round(positive('viewers', values.viewers)),
        clientProcesses: Math.round(positive('client-processes', values['client-processes'])),
        wave: Math.round(positive('wave', values.wave)),
        cycles,
        voteRounds: Math.min(cycles, Math.round(positive('vote-rounds', values['vote-rounds']))),
        log,
      });
    },
  },
  {
    name: 'dashboard',
    run: () =>
      dashboardBenchmark({
        events: Math.round(positive('dashboard-events', values['dashboard-events'])),
        runs: Math.round(positive('dashboard-runs', values['dashboard-runs'])),
        probes: Math.round(positive('dashboard-probes', values['dashboard-probes'])),
        log,
      }),
  },
  {
    name: 'dashboard-ui',
    run: () => dashboardUiBenchmark({ runs: Math.round(positive('dashboard-ui-runs', values['dashboard-ui-runs'])), log }),
  },
  {
    name: 'export',
    run: () =>
      exportBenchmark({
        events: Math.round(positive('export-events', values['export-events'])),
        deletions: Math.round(positive('export-deletions', values['export-deletions'])),
        log,
      }),
  },
  {
    name: 'webhooks',
    run: () =>
      webhookBenchmark({
        events: Math.round(positive('webhook-events', values['webhook-events'])),
        rate: Math.round(positive('webhook-rate', values['webhook-rate'])),
        log,
      }),
  },
  {
    name: 'metadata',
    run: () =>
      metadataBenchmark({
        seconds: positive('metadata-seconds', values['metadata-seconds']),
        repeat: Math.round(positive('metadata-repeat', values['metadata-repeat'])),
        log,
      }),
  },
  {
    name: 'cluster-ingest',
    run: () =>
      clusterIngestBenchmark({
        seconds: positive('seconds', values.seconds),
        warmupSeconds: positive('warmup', values.warmup),
        connections: Math.round(positive('connections', values.connections)),
        repeat: Math.round(positive('repeat', values.repeat)),
        poolEvents: Math.round(positive('events', values.events)),
        writerEvents: Math.round(positive('cluster-writer-events', values['cluster-writer-events'])),
        readEvents: Math.round(Number(values['cluster-read-events'])) || 0,
        log,
      }),
  },
  {
    name: 'cluster-fanout',
    run: () => {
      const cycles = Math.round(positive('cluster-cycles', values['cluster-cycles']));
      return clusterFanoutBenchmark({
        totals: values['cluster-viewers'].split(',').map((n) => Math.round(positive('cluster-viewers', n.trim()))),
        nodes: Math.round(positive('cluster-nodes', values['cluster-nodes'])),
        clientProcesses: Math.round(positive('cluster-client-processes', values['cluster-client-processes'])),
        wave: Math.round(positive('wave', values.wave)),
        cycles,
        voteRounds: Math.min(cycles, Math.round(positive('cluster-vote-rounds', values['cluster-vote-rounds']))),
        embedded: values['cluster-embedded'] !== 'false',
        log,
      });
    },
  },
  {
    name: 'cluster',
    run: () =>
      clusterBenchmark({
        seconds: positive('seconds', values.seconds),
        warmupSeconds: positive('warmup', values.warmup),
        connections: Math.round(positive('connections', values.connections)),
        poolEvents: Math.round(positive('events', values.events)),
        maxNodes: Math.round(positive('cluster-max-nodes', values['cluster-max-nodes'])),
        fanoutViewers: Math.round(positive('cluster-fanout-viewers', values['cluster-fanout-viewers'])),
        fanoutCycles: Math.round(positive('cluster-cycles', values['cluster-cycles'])),
        events: Math.round(positive('cluster-events', values['cluster-events'])),
        deletions: Math.round(positive('cluster-deletions', values['cluster-deletions'])),
        dashboardRuns: Math.round(positive('cluster-dashboard-runs', values['cluster-dashboard-runs'])),
        webhookEvents: Math.round(positive('cluster-webhook-events', values['cluster-webhook-events'])),
        log,
      }),
  },
];

const names = BENCHMARKS.map((b) => b.name);
const only = values.only ? values.only.split(',').map((n) => n.trim()).filter(Boolean) : names;
for (const name of only) {
  if (!names.includes(name)) throw new Error(`--only: no benchmark "${name}"; there are ${names.join(', ')}`);
}

try {
  const machine = machineInfo();
  const tables: BenchTable[] = [];
  for (const benchmark of BENCHMARKS.filter((b) => only.includes(b.name))) {
    log(`== ${benchmark.name}`);
    tables.push(await benchmark.run());
  }
  process.stdout.write(`\n${renderReport(machine, tables)}\n`);
  if (tables.some((t) => t.runErrors)) {
    log('\n!!! THE RUN HAD ERRORS (failed requests, rejected events, failed or dropped connections, lost frames or votes): the figures above are not valid. !!!');
    process.exitCode = 1;
  }
} catch (error) {
  log(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  killAll();
  process.exitCode = 1;
}
