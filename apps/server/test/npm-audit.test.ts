import { describe, expect, it } from 'vitest';
import { judgeAudit } from '../../../tools/npm-audit';
import { judgeOffline, matchAdvisories, productionPackages, type AdvisorySnapshot } from '../../../tools/offline-advisories';

const report = (vulnerabilities: Record<string, { severity: string }>) =>
  JSON.stringify({
    auditReportVersion: 2,
    vulnerabilities: Object.fromEntries(Object.entries(vulnerabilities).map(([name, v]) => [name, { name, severity: v.severity, via: [] }])),
    metadata: { vulnerabilities: { info: 0, low: 0, moderate: 0, high: 0, critical: 0, total: Object.keys(vulnerabilities).length } },
  });

describe('npm audit gate', () => {
  it('passes a clean report and one with only low or moderate advisories', () => {
    expect(judgeAudit(report({})).ok).toBe(true);
    expect(judgeAudit(report({ 'some-lib': { severity: 'moderate' }, other: { severity: 'low' } })).ok).toBe(true);
  });

  it('fails on a high or critical advisory and names the package', () => {
    const verdict = judgeAudit(report({ 'bad-lib': { severity: 'high' }, fine: { severity: 'low' } }));
    expect(verdict).toEqual({ ok: false, couldNotRun: false, reason: expect.stringContaining('bad-lib (high)') });
    expect(judgeAudit(report({ worse: { severity: 'critical' } })).ok).toBe(false);
  });

  it('fails when the audit could not be done, rather than passing silently', () => {
    expect(judgeAudit('').ok).toBe(false);
    expect(judgeAudit('npm error audit endpoint returned an error').ok).toBe(false);
    expect(judgeAudit(JSON.stringify({ error: { code: 'E405', summary: 'audit endpoint returned an error' } }))).toEqual({ ok: false, couldNotRun: true, reason: expect.stringContaining('could not run') });
    expect(judgeAudit(JSON.stringify({ auditReportVersion: 2 })).ok).toBe(false);
  });
});

describe('offline advisory check (when the registry refuses npm audit)', () => {
  const snapshot: AdvisorySnapshot = {
    meta: { snapshot_date: '2026-05-04T13:06:56.926Z' },
    advisories: [
      { id: 'GHSA-high', package: 'lib-a', severity: 'HIGH', summary: 'prototype pollution', ranges: [{ type: 'GHSA_RANGE', expr: '>= 1.0.0, < 1.2.3', fixed: '1.2.3' }] },
      { id: 'GHSA-osv', package: 'lib-b', severity: 'CRITICAL', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '2.0.0' }, { introduced: '3.0.0' }, { last_affected: '3.1.0' }] }] },
      { id: 'GHSA-listed', package: 'lib-c', severity: 'LOW', versions: ['0.9.1'] },
    ],
  };

  it('names every production package version that an advisory covers, and fails on high or critical', () => {
    const installed = [
      { name: 'lib-a', version: '1.2.2' },
      { name: 'lib-b', version: '3.1.0' },
      { name: 'lib-c', version: '0.9.1' },
    ];
    const verdict = judgeOffline(snapshot, installed, new Date('2026-11-25T00:00:00Z'));
    expect(verdict.ok).toBe(false);
    expect(verdict.lines[0]).toContain('2026-05-04 (204 days old');
    expect(verdict.lines).toContain('lib-a@1.2.2: high GHSA-high prototype pollution');
    expect(verdict.lines).toContain('lib-b@3.1.0: critical GHSA-osv');
    expect(verdict.lines).toContain('lib-c@0.9.1: low GHSA-listed');
  });

  it('passes versions outside every range, and low advisories alone', () => {
    const outside = [
      { name: 'lib-a', version: '1.2.3' },
      { name: 'lib-a', version: '0.9.0' },
      { name: 'lib-b', version: '2.0.0' },
      { name: 'lib-b', version: '3.1.1' },
      { name: 'lib-c', version: '0.9.2' },
    ];
    expect(matchAdvisories(snapshot, outside)).toEqual([]);
    expect(judgeOffline(snapshot, [{ name: 'lib-c', version: '0.9.1' }], new Date()).ok).toBe(true);
  });

  it('reads the production packages of the lock file, leaving out dev-only ones and workspace links', () => {
    const packages = productionPackages({
      packages: {
        '': { version: '0.1.0' },
        'node_modules/fastify': { version: '5.0.0' },
        'node_modules/fastify/node_modules/semver': { version: '7.0.0' },
        'node_modules/vitest': { version: '4.0.0', dev: true },
        'node_modules/@svc/protocol': { link: true },
      },
    });
    expect(packages).toEqual([
      { name: 'fastify', version: '5.0.0' },
      { name: 'semver', version: '7.0.0' },
    ]);
  });

  it('treats a refused audit endpoint as "could not run", so the offline snapshot is read', () => {
    const refused = JSON.stringify({ message: '405 Method Not Allowed - POST …/advisories/bulk', statusCode: 405, error: { summary: '', detail: '' } });
    expect(judgeAudit(refused)).toEqual({ ok: false, couldNotRun: true, reason: expect.stringContaining('405 Method Not Allowed') });
  });
});
