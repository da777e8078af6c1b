import { detectPii, findPii } from '@svc/protocol';

/** Largest rejected payload kept whole; larger ones keep only a note of their size. */
export const MAX_QUARANTINE_PAYLOAD_BYTES = 32 * 1024;
const REDACTED = '[redacted]';

/**
 * What the quarantine keeps of a rejected event: the event as sent, except that every value
 * that looks like personal data (anywhere in it, whatever the rejection reason) is masked,
 * so a rejected event never brings personal data into storage.
 */
export function quarantinePayload(raw: unknown, serializedBytes: number): string {
  if (serializedBytes > MAX_QUARANTINE_PAYLOAD_BYTES) {
    return JSON.stringify({ truncated: true, bytes: serializedBytes });
  }
  const findings = findPii(raw);
  if (!findings.length) return JSON.stringify(raw ?? null);
  const copy = structuredClone(raw) as unknown;
  // Deepest paths first, so that dropping a key does not move a later path.
  for (const { path } of findings.sort((a, b) => b.path.length - a.path.length)) maskPointer(copy, path);
  return JSON.stringify(copy);
}

/** What stands in the quarantine for a container nested deeper than an event may be. */
export const TRUNCATED_MARKER = '[nested too deep]';

/**
 * A copy of `value` whose objects and arrays go `maxDepth` levels deep at most (`value` being
 * level 1); deeper ones are replaced by a marker. It keeps a too-deep event's outer levels for
 * the quarantine without anything recursing through all of it.
 */
export function truncatedToDepth(value: unknown, maxDepth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (maxDepth <= 0) return TRUNCATED_MARKER;
  if (Array.isArray(value)) return value.map((item) => truncatedToDepth(item, maxDepth - 1));
  // fromEntries defines own properties: a "__proto__" key stays a key.
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, truncatedToDepth(item, maxDepth - 1)]));
}

function maskPointer(root: unknown, pointer: string): void {
  const parts = pointer.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node = root as Record<string, unknown> | unknown[];
  for (let i = 0; i < parts.length - 1; i++) {
    const next = (node as Record<string, unknown>)[parts[i]!];
    if (next === null || typeof next !== 'object') return;
    node = next as Record<string, unknown>;
  }
  const last = parts[parts.length - 1];
  if (last === undefined) return;
  const container = node as Record<string, unknown>;
  if (!Object.hasOwn(container, last)) return;
  // A key that is itself personal data goes with its value.
  if (!Array.isArray(container) && detectPii(last)) delete container[last];
  else if (typeof container[last] === 'string') container[last] = REDACTED;
}
