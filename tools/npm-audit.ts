/**
 * `npm run audit:prod`: fails on high or critical advisories in production dependencies, and
 * also when the audit could not be done (registry unreachable, endpoint refused): a gate that
 * cannot look must not pass.
 */
import { spawnSync } from 'node:child_process';

export type AuditVerdict = { ok: true; summary: string } | { ok: false; reason: string };

const BLOCKING = ['high', 'critical'] as const;

/** Judges the output of `npm audit --json`. */
export function judgeAudit(stdout: string): AuditVerdict {
  let report: { error?: { summary?: string }; metadata?: { vulnerabilities?: Record<string, number> }; vulnerabilities?: Record<string, { severity: string; via: unknown[] }> };
  try {
    report = JSON.parse(stdout);
  } catch {
    return { ok: false, reason: `npm audit gave no report: ${stdout.slice(0, 300) || '(nothing)'}` };
  }
  if (report.error) return { ok: false, reason: `npm audit could not run: ${report.error.summary ?? 'unknown error'}` };
  const counts = report.metadata?.vulnerabilities;
  if (!counts) return { ok: false, reason: 'npm audit report has no vulnerability counts' };
  const blocking = Object.entries(report.vulnerabilities ?? {}).filter(([, v]) => (BLOCKING as readonly string[]).includes(v.severity));
  if (blocking.length) return { ok: false, reason: `high/critical advisories in production dependencies: ${blocking.map(([name, v]) => `${name} (${v.severity})`).join(', ')}` };
  return { ok: true, summary: Object.entries(counts).map(([severity, n]) => `${severity} ${n}`).join(', ') };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8', timeout: 120_000 });
  const verdict = judgeAudit(run.stdout ?? '');
  if (verdict.ok) console.log(`npm audit (production): ${verdict.summary}`);
  else {
    console.error(verdict.reason);
    process.exit(1);
  }
}
