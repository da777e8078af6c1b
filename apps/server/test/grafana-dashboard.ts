import { readFileSync } from 'node:fs';

/** The cluster's Grafana dashboard, as operators import it. */
export const DASHBOARD_PATH = new URL('../../../deploy/grafana/svc-cluster.json', import.meta.url);

export interface DashboardTarget {
  refId?: unknown;
  expr?: unknown;
  legendFormat?: unknown;
  datasource?: unknown;
}

export interface DashboardPanel {
  id?: unknown;
  type?: unknown;
  title?: unknown;
  datasource?: unknown;
  gridPos?: { h?: unknown; w?: unknown; x?: unknown; y?: unknown };
  targets?: DashboardTarget[];
}

export interface Dashboard {
  title?: unknown;
  uid?: unknown;
  schemaVersion?: unknown;
  panels?: DashboardPanel[];
  templating?: { list?: Array<{ name?: unknown; query?: unknown; definition?: unknown }> };
}

export function readDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as Dashboard;
}

/** Every PromQL expression of the dashboard: the panels' targets and the template variables' queries. */
export function dashboardExpressions(dashboard: Dashboard): string[] {
  const panels = (dashboard.panels ?? []).flatMap((panel) => (panel.targets ?? []).map((target) => String(target.expr)));
  const variables = (dashboard.templating?.list ?? []).flatMap((variable) => {
    const query = variable.query as { query?: unknown } | string | undefined;
    const text = typeof query === 'object' ? query?.query : variable.definition;
    return typeof text === 'string' && text.includes('svc_') ? [text] : [];
  });
  return [...panels, ...variables];
}

/** The metric names an expression reads (the service's all start with `svc_`). */
export function metricNamesIn(expression: string): string[] {
  return [...new Set(expression.match(/\bsvc_[a-z0-9_]+/g) ?? [])];
}

/**
 * The sample names a /metrics body can hold: each `# TYPE` line's name, with `_bucket`, `_sum`
 * and `_count` for a histogram and `_sum`, `_count` for a summary (a labelled metric without
 * samples yet still has its TYPE line).
 */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name! + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name! + suffix);
  }
  return names;
}

/** Whether the expression's brackets and quotes pair up (a cheap guard against a broken edit: no PromQL parser here). */
export function bracketsPair(expression: string): boolean {
  const closing: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  const open: string[] = [];
  let quoted = false;
  for (const c of expression) {
    if (c === '"') quoted = !quoted;
    else if (quoted) continue;
    else if ('([{'.includes(c)) open.push(c);
    else if (closing[c] && open.pop() !== closing[c]) return false;
  }
  return !quoted && open.length === 0;
}
