/**
 * `npm run bench`: runs the benchmarks and prints their tables as markdown on stdout
 * (progress goes to stderr). Each benchmark is a module of bench/ returning one BenchTable;
 * add new ones to BENCHMARKS.
 *
 *   npm run bench -- [--seconds N] [--warmup N] [--connections N] [--repeat N] [--sweep 8,32,64] [--events N]
 */
import { parseArgs } from 'node:util';
import { DEFAULT_CONNECTIONS, ingestBenchmark } from './ingest';
import { killAll } from './processes';
import { machineInfo, renderReport, type BenchTable } from './report';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: String(DEFAULT_CONNECTIONS) },
    repeat: { type: 'string', default: '3' },
    sweep: { type: 'string', default: '' },
    events: { type: 'string', default: '1500000' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  process.stdout.write('npm run bench -- [--seconds 10] [--warmup 2] [--connections 64] [--repeat 3] [--sweep 8,32,64] [--events 1500000]\n');
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
];

try {
  const machine = machineInfo();
  const tables: BenchTable[] = [];
  for (const benchmark of BENCHMARKS) {
    log(`== ${benchmark.name}`);
    tables.push(await benchmark.run());
  }
  process.stdout.write(`\n${renderReport(machine, tables)}\n`);
  if (tables.some((t) => t.runErrors)) {
    log('\n!!! THE RUN HAD ERRORS (failed requests or rejected events): the figures above are not valid. !!!');
    process.exitCode = 1;
  }
} catch (error) {
  log(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  killAll();
  process.exitCode = 1;
}
