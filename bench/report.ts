import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, release, totalmem } from 'node:os';

/** One line of a results table; every cell is already formatted. */
export interface Row {
  figure: string;
  value: string;
  /** The same figure for the baseline, or '—' when there is none. */
  baseline: string;
  /** value ÷ baseline, or '—'. */
  ratio: string;
  /** What the figure should reach, or '—'. */
  target: string;
  verdict: 'pass' | 'fail' | '—';
}

/** What one benchmark module returns: its table, notes printed under it, and whether the run was clean. */
export interface BenchTable {
  title: string;
  rows: Row[];
  notes: string[];
  /** True when the run itself went wrong (failed requests, rejected events): its figures are not trustworthy. */
  runErrors: boolean;
  /** Extra tables (e.g. a connection sweep), printed after the main one. */
  extra?: { title: string; header: string[]; rows: string[][] }[];
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  os: string;
  date: string;
}

export function machineInfo(now = new Date()): Machine {
  let cpu = cpus()[0]?.model ?? 'unknown';
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (match?.[1]) cpu = match[1].trim();
  } catch {
    // Not Linux: keep what os.cpus() said.
  }
  return {
    cpu,
    cores: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    os: `${process.platform} ${release()}`,
    date: now.toISOString().slice(0, 10),
  };
}

export function machineLine(m: Machine): string {
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB RAM, Node ${m.node}, ${m.os}; run on ${m.date}`;
}

const HEADER = ['figure', 'value', 'baseline', 'ratio', 'target', 'pass/fail'];

export function markdownTable(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function renderTable(table: BenchTable): string {
  const parts = [`### ${table.title}`, ''];
  if (table.runErrors) {
    parts.push('**THIS RUN HAD ERRORS: failed requests or rejected events (see the errors row). Its figures are not valid.**', '');
  }
  parts.push(markdownTable(HEADER, table.rows.map((r) => [r.figure, r.value, r.baseline, r.ratio, r.target, r.verdict])));
  for (const extra of table.extra ?? []) parts.push('', `#### ${extra.title}`, '', markdownTable(extra.header, extra.rows));
  if (table.notes.length) parts.push('', ...table.notes.map((n) => `- ${n}`));
  return parts.join('\n');
}

/** Every figure of every benchmark in one table, each named after its benchmark ("Ingest: …"). */
export function renderSummary(tables: BenchTable[]): string {
  const rows = tables.flatMap((table) => {
    const name = table.title.split(':')[0]!;
    const flag = table.runErrors ? ' (run had errors)' : '';
    return table.rows.map((r) => [`${name}${flag}: ${r.figure}`, r.value, r.baseline, r.ratio, r.target, r.verdict]);
  });
  const failed = tables.flatMap((t) => t.rows).filter((r) => r.verdict === 'fail').length;
  const passed = tables.flatMap((t) => t.rows).filter((r) => r.verdict === 'pass').length;
  return ['### All figures', '', markdownTable(HEADER, rows), '', `Targets: ${passed} pass, ${failed} fail.`].join('\n');
}

export function renderReport(machine: Machine, tables: BenchTable[]): string {
  return [`Machine: ${machineLine(machine)}`, '', renderSummary(tables), '', ...tables.map(renderTable).join('\n\n').split('\n')].join('\n');
}

/** Formatting helpers shared by benchmark modules. */
export const fmt = {
  int: (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—'),
  ms: (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 1) : '—'),
  ratio: (a: number, b: number) => (b > 0 && Number.isFinite(a / b) ? (a / b).toFixed(2) : '—'),
};
