import { maskPii } from '@svc/protocol';

/** Largest rejected payload kept whole; larger ones keep only a note of their size. */
export const MAX_QUARANTINE_PAYLOAD_BYTES = 32 * 1024;

/**
 * What the quarantine keeps of a rejected event: the event as sent, except that every value
 * that looks like personal data (anywhere in it, whatever the rejection reason) is masked, and
 * anything nested deeper than the privacy guard reads is dropped, so a rejected event never
 * brings personal data into storage.
 */
export function quarantinePayload(raw: unknown, serializedBytes: number): string {
  if (serializedBytes > MAX_QUARANTINE_PAYLOAD_BYTES) {
    return JSON.stringify({ truncated: true, bytes: serializedBytes });
  }
  return JSON.stringify(maskPii(raw) ?? null);
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
