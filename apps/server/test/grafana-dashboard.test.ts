import { describe, expect, it } from 'vitest';
import { bracketsPair, dashboardExpressions, exposedNames, metricNamesIn, readDashboard } from './grafana-dashboard';
import { startTestApp } from './test-app';

describe('the Grafana dashboard of the cluster (deploy/grafana/svc-cluster.json)', () => {
  const dashboard = readDashboard();

  it('has the shape Grafana imports: a title, uid, schema version and panels with ids, positions and targets', () => {
    expect(dashboard.title).toEqual(expect.any(String));
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
    expect(dashboard.schemaVersion).toEqual(expect.any(Number));
    expect(dashboard.schemaVersion as number).toBeGreaterThanOrEqual(30);
    const panels = dashboard.panels ?? [];
    expect(panels.length).toBeGreaterThanOrEqual(10);
    expect(new Set(panels.map((panel) => panel.id)).size).toBe(panels.length);
    for (const panel of panels) {
      expect(panel, String(panel.title)).toMatchObject({ id: expect.any(Number), type: 'timeseries', title: expect.any(String), datasource: { type: 'prometheus' } });
      expect(panel.gridPos, String(panel.title)).toEqual({ h: expect.any(Number), w: expect.any(Number), x: expect.any(Number), y: expect.any(Number) });
      expect(panel.targets?.length, String(panel.title)).toBeGreaterThan(0);
      const refIds = panel.targets!.map((target) => target.refId);
      expect(new Set(refIds).size, String(panel.title)).toBe(refIds.length);
      for (const target of panel.targets!) {
        expect(target.expr, String(panel.title)).toEqual(expect.any(String));
        expect(metricNamesIn(String(target.expr)).length, String(target.expr)).toBeGreaterThan(0);
        expect(bracketsPair(String(target.expr)), String(target.expr)).toBe(true);
      }
    }
    expect(dashboard.templating?.list?.map((variable) => variable.name)).toEqual(expect.arrayContaining(['datasource', 'node']));
  });

  it('shows every figure operators watch, per node', () => {
    const names = new Set(dashboardExpressions(dashboard).flatMap(metricNamesIn));
    for (const name of [
      'svc_events_accepted_total',
      'svc_http_request_duration_seconds_bucket',
      'svc_ws_connections',
      'svc_jetstream_consumer_lag_messages',
      'svc_writer_batch_rows_sum',
      'svc_writer_insert_duration_seconds_bucket',
      'svc_webhook_attempts_total',
      'svc_bus_round_trip_seconds_bucket',
      'svc_http_request_duration_seconds_count',
    ]) {
      expect(names, name).toContain(name);
    }
    // Per node: each panel but the cluster-wide consumer lag splits by the node label.
    for (const expression of dashboardExpressions(dashboard)) {
      if (!expression.includes('svc_jetstream_consumer_lag_messages') && !expression.startsWith('label_values')) expect(expression).toMatch(/by \(node\b/);
    }
  });

  it('reads only metrics an embedded node also exposes, but for those of full cluster mode', async () => {
    const t = await startTestApp();
    try {
      const exposed = exposedNames((await t.app.inject({ url: '/metrics' })).body);
      const clusterOnly = /^svc_(jetstream_|writer_|bus_)/;
      const missing = dashboardExpressions(dashboard)
        .flatMap(metricNamesIn)
        .filter((name) => !exposed.has(name) && !clusterOnly.test(name));
      expect(missing).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
