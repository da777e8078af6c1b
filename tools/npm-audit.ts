/**
 * `npm run audit:prod`: fails on high or critical advisories in production dependencies. When
 * the registry cannot be asked (endpoint refused, unreachable), it reads the offline snapshot of
 * advisories (`SVC_ADVISORIES_FILE`, default `../shared/advisories/npm-advisories.json` beside the
 * checkout) and says how old its data is; with neither, it fails: a gate that cannot look must
 * not pass.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { judgeOffline, productionPackages, type AdvisorySnapshot } from './offline-advisories';

export type AuditVerdict = { ok: true; summary: string } | { ok: false; reason: string; couldNotRun: boolean };

const BLOCKING = ['high', 'critical'] as const;

/** Judges the output of `npm audit --json`. */
export function judgeAudit(stdout: string): AuditVerdict {
  let report: { message?: string; error?: { summary?: string }; metadata?: { vulnerabilities?: Record<string, number> }; vulnerabilities?: Record<string, { severity: string; via: unknown[] }> };
  try {
    report = JSON.parse(stdout);
  } catch {
    return { ok: false, couldNotRun: true, reason: `npm audit gave no report: ${stdout.slice(0, 300) || '(nothing)'}` };
  }
  if (report.error) return { ok: false, couldNotRun: true, reason: `npm audit could not run: ${report.error.summary || report.message || 'unknown error'}` };
  const counts = report.metadata?.vulnerabilities;
  if (!counts) return { ok: false, couldNotRun: true, reason: 'npm audit report has no vulnerability counts' };
  const blocking = Object.entries(report.vulnerabilities ?? {}).filter(([, v]) => (BLOCKING as readonly string[]).includes(v.severity));
  if (blocking.length) return { ok: false, couldNotRun: false, reason: `high/critical advisories in production dependencies: ${blocking.map(([name, v]) => `${name} (${v.severity})`).join(', ')}` };
  return { ok: true, summary: Object.entries(counts).map(([severity, n]) => `${severity} ${n}`).join(', ') };
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_SNAPSHOT = resolve(ROOT, '../shared/advisories/npm-advisories.json');

function auditOffline(reason: string): boolean {
  const file = process.env.SVC_ADVISORIES_FILE ?? DEFAULT_SNAPSHOT;
  console.log(`${reason}; checking the offline snapshot ${file} instead`);
  if (!existsSync(file)) {
    console.error(`no offline advisory snapshot at ${file} (set SVC_ADVISORIES_FILE)`);
    return false;
  }
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as AdvisorySnapshot;
  const lock = JSON.parse(readFileSync(resolve(ROOT, 'package-lock.json'), 'utf8'));
  const verdict = judgeOffline(snapshot, productionPackages(lock), new Date());
  for (const line of verdict.lines) (verdict.ok ? console.log : console.error)(line);
  return verdict.ok;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  const verdict = judgeAudit(run.stdout ?? '');
  if (verdict.ok) console.log(`npm audit (production): ${verdict.summary}`);
  else if (verdict.couldNotRun) {
    if (!auditOffline(verdict.reason)) process.exit(1);
  } else {
    console.error(verdict.reason);
    process.exit(1);
  }
}
