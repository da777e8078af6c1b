/** One sample of a Prometheus text exposition. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a /metrics body (comments skipped). */
export function prometheusSamples(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = [];
  for (const line of text.split('\n')) {
    const match = SAMPLE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * The body with every sample's `node` label taken out (the label every sample carries), so
 * that a test reads `svc_events_duplicate_total 1` whatever node wrote it.
 */
export function withoutNodeLabel(text: string): string {
  return text.replace(/\{node="[^"]*"\}/g, '').replace(/,node="[^"]*"/g, '');
}
