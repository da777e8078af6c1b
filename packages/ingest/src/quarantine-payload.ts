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
