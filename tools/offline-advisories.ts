/**
 * Checks installed package versions against an offline snapshot of npm advisories (the format of
 * `shared/advisories/npm-advisories.json`): used when the registry refuses `npm audit`.
 */
import semver from 'semver';

export type Severity = 'LOW' | 'MODERATE' | 'HIGH' | 'CRITICAL';

type RangeEvent = { introduced?: string; fixed?: string; last_affected?: string };
type AdvisoryRange = { type: 'SEMVER'; events: RangeEvent[] } | { type: 'GHSA_RANGE'; expr: string; fixed?: string };

export interface Advisory {
  id: string;
  package: string;
  severity: Severity;
  summary?: string;
  ranges?: AdvisoryRange[];
  versions?: string[];
}

export interface AdvisorySnapshot {
  meta: { snapshot_date: string };
  advisories: Advisory[];
}

export interface InstalledPackage {
  name: string;
  version: string;
}

export interface Finding {
  package: InstalledPackage;
  advisory: Advisory;
}

const BLOCKING: readonly Severity[] = ['HIGH', 'CRITICAL'];
const DAY_MS = 86_400_000;

/** The production packages a lock file (v2 or v3) installs: every entry not marked dev-only. */
export function productionPackages(lock: { packages?: Record<string, { version?: string; dev?: boolean; link?: boolean; name?: string }> }): InstalledPackage[] {
  const seen = new Map<string, InstalledPackage>();
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    const at = path.lastIndexOf('node_modules/');
    if (at < 0 || entry.dev || entry.link || !entry.version) continue;
    const name = entry.name ?? path.slice(at + 'node_modules/'.length);
    seen.set(`${name}@${entry.version}`, { name, version: entry.version });
  }
  return [...seen.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
}

/** Whether one range of an advisory covers `version`; an unreadable range counts as covering it. */
function rangeCovers(range: AdvisoryRange, version: string): boolean {
  const options = { includePrerelease: true, loose: true };
  if (range.type === 'GHSA_RANGE') {
    const expression = range.expr.replace(/,/g, ' ').replace(/([<>=]+)\s+/g, '$1');
    if (!semver.validRange(expression, options)) return true;
    return semver.satisfies(version, expression, options);
  }
  // OSV events: each `introduced` opens an interval that the next `fixed` or `last_affected` closes.
  let affected = false;
  let from: string | undefined;
  for (const event of range.events) {
    if (event.introduced !== undefined) from = event.introduced === '0' ? '0.0.0-0' : event.introduced;
    const upper = event.fixed !== undefined ? `<${event.fixed}` : event.last_affected !== undefined ? `<=${event.last_affected}` : undefined;
    if (upper && from !== undefined) {
      affected ||= semver.satisfies(version, `>=${from} ${upper}`, options);
      from = undefined;
    }
  }
  if (from !== undefined) affected ||= semver.gte(version, from, true);
  return affected;
}

/** Every (package, advisory) pair where the advisory covers the installed version. */
export function matchAdvisories(snapshot: AdvisorySnapshot, installed: InstalledPackage[]): Finding[] {
  const byPackage = new Map<string, Advisory[]>();
  for (const advisory of snapshot.advisories) {
    const list = byPackage.get(advisory.package) ?? [];
    list.push(advisory);
    byPackage.set(advisory.package, list);
  }
  const findings: Finding[] = [];
  for (const pkg of installed) {
    if (!semver.valid(pkg.version, true)) continue;
    for (const advisory of byPackage.get(pkg.name) ?? []) {
      const listed = advisory.versions?.includes(pkg.version) ?? false;
      if (listed || (advisory.ranges ?? []).some((range) => rangeCovers(range, pkg.version))) findings.push({ package: pkg, advisory });
    }
  }
  return findings;
}

export interface OfflineVerdict {
  ok: boolean;
  lines: string[];
}

/** The report: the data's age first, every covered package version, then the verdict. */
export function judgeOffline(snapshot: AdvisorySnapshot, installed: InstalledPackage[], now: Date): OfflineVerdict {
  const ageDays = Math.floor((now.getTime() - Date.parse(snapshot.meta.snapshot_date)) / DAY_MS);
  const findings = matchAdvisories(snapshot, installed);
  const blocking = findings.filter((finding) => BLOCKING.includes(finding.advisory.severity));
  const lines = [
    `offline advisory snapshot of ${snapshot.meta.snapshot_date.slice(0, 10)} (${ageDays} days old; advisories published after it are not covered): ${snapshot.advisories.length} advisories, ${installed.length} production package versions checked`,
    ...findings.map(({ package: pkg, advisory }) => `${pkg.name}@${pkg.version}: ${advisory.severity.toLowerCase()} ${advisory.id} ${advisory.summary ?? ''}`.trimEnd()),
  ];
  lines.push(blocking.length ? `${blocking.length} high or critical advisories cover production packages` : `no high or critical advisory covers a production package (${findings.length} lower)`);
  return { ok: blocking.length === 0, lines };
}
