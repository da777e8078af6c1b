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

/**
 * The quarantine's form of an event nested deeper than `MAX_EVENT_DEPTH`, which nothing may
 * serialize whole: `maskPii` reads no deeper than that limit and leaves a marker below it, so its
 * copy holds the event's masked outer levels, kept within the same size limit.
 */
export function tooDeepQuarantinePayload(raw: unknown): string {
  const text = JSON.stringify(maskPii(raw) ?? null);
  const bytes = Buffer.byteLength(text);
  return bytes > MAX_QUARANTINE_PAYLOAD_BYTES ? JSON.stringify({ truncated: true, bytes }) : text;
}
