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
