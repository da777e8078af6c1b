import { describe, expect, it } from 'vitest';
import { judgeAudit } from '../../../tools/npm-audit';

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
    expect(verdict).toEqual({ ok: false, reason: expect.stringContaining('bad-lib (high)') });
    expect(judgeAudit(report({ worse: { severity: 'critical' } })).ok).toBe(false);
  });

  it('fails when the audit could not be done, rather than passing silently', () => {
    expect(judgeAudit('').ok).toBe(false);
    expect(judgeAudit('npm error audit endpoint returned an error').ok).toBe(false);
    expect(judgeAudit(JSON.stringify({ error: { code: 'E405', summary: 'audit endpoint returned an error' } }))).toEqual({ ok: false, reason: expect.stringContaining('could not run') });
    expect(judgeAudit(JSON.stringify({ auditReportVersion: 2 })).ok).toBe(false);
  });
});
